"""probegate: red-team AI agents in CI."""

__version__ = "0.1.0"

# Where probegate lives: SARIF's informationUri and the base of every helpUri.
PROJECT_URL = "https://github.com/probegate/probegate"
DOCS_URL = PROJECT_URL + "/blob/main/docs/"
