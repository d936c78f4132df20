"""``probegate init --workflow``: the example workflow (examples/probegate.yml), made to work
for the route the config describes.

The Action runs in a container of its own, so what "works" depends on where the agent is:

- a model with a prompt and tools (``openai``, ``anthropic``) or a python agent: the Action
  reaches it as it is (a python agent is imported in the container; its dependencies come from
  a hash-pinned ``requirements`` file, and behind the model-API proxy its base URL is the
  container's own ``127.0.0.1``, where the proxy listens);
- an http agent at an address of the network (staging): reached as it is;
- an http agent on the runner (a loopback endpoint): ``127.0.0.1`` inside the Action's
  container is the container, not the runner. A step starts the agent on the runner's address
  on Docker's bridge network, the container's default gateway, and the scan is pointed there;
- an http agent behind the model-API proxy: the proxy listens in the scan's process, which the
  agent on the runner cannot reach inside the container, so probegate runs on the runner
  itself, in a step that writes the outputs the Action would (docs/scan-your-agent/proxy.md).

Each is a text edit of the example, anchored on its lines, so the workflow a user gets is the
documented one (tests/commands/test_init.py plays them through the Action's entrypoint).
"""

from __future__ import annotations

import textwrap
from importlib import resources
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import yaml

if TYPE_CHECKING:
    from probegate.scaffold import Route

# The variable the example passes through to the scan, renamed for the route's.
TEMPLATE_KEY_ENV = "OPENAI_API_KEY"
_ACTION = "probegate/probegate@"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# Where the probegate steps of the example take their inputs from (with:).
_CONFIG_LINE = "          config: probegate.yml\n"
_ARGS_LINE = "          args: "
WAIT_SECONDS = 60


def workflow_text(route: Route) -> str:
    """The workflow for ``route`` (see the module's docstring for what changes, and why)."""
    text = resources.files(__package__).joinpath("data/workflow.yml").read_text("utf-8")
    text = _key_env(text, route)
    if route.kind == "python":
        text = text.replace(_CONFIG_LINE, _CONFIG_LINE + _REQUIREMENTS)
        if route.proxy is not None:
            text = _add_env(text, f"{route.proxy.base_url_env}: {route.proxy.base_url}", _PROXY_ENV)
    elif route.kind == "http" and on_the_runner(route):
        text = _each_probegate_step(text, route)
    return text


def endpoint_of(route: Route) -> str:
    from probegate.scaffold import default

    return default(route, "endpoint") or ""


def on_the_runner(route: Route) -> bool:
    """Whether the http agent is one the workflow must start: its endpoint is a loopback one."""
    host = urlsplit(endpoint_of(route)).hostname or ""
    return host in _LOOPBACK


def _key_env(text: str, route: Route) -> str:
    """The route's key variable in place of the example's (the upstream's, behind the proxy),
    or no such line when the route has none."""
    from probegate.scaffold import default

    key_env = route.proxy.key_env if route.proxy is not None else default(route, "api_key_env")
    if key_env is None:
        kept = [line for line in text.splitlines(keepends=True) if TEMPLATE_KEY_ENV not in line]
        return "".join(kept)
    return text.replace(TEMPLATE_KEY_ENV, key_env)


_REQUIREMENTS = (
    "          # Your agent's own dependencies: a complete, hash-pinned lock (pip-compile\n"
    "          # --generate-hashes), installed in the Action's container for the scan.\n"
    "          # requirements: requirements/agent.txt\n"
)
_PROXY_ENV = (
    "          # The agent runs in the Action's container, beside the model-API proxy: its model\n"
    "          # base URL is the container's own 127.0.0.1 (probegate.yml: model_proxy.listen).\n"
)


def _add_env(text: str, line: str, comment: str) -> str:
    """``line`` in the ``env:`` of every probegate step, after its comment."""
    out: list[str] = []
    inside = False
    for current in text.splitlines(keepends=True):
        if current.startswith("      - "):
            inside = False
        if current.lstrip().startswith("uses: " + _ACTION):
            inside = True
        out.append(current)
        if inside and current == "        env:\n":
            out.append(comment + f"          {line}\n")
    return "".join(out)


def _each_probegate_step(text: str, route: Route) -> str:
    """Every probegate step of the example, started after the agent, or replaced (the proxy)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    index = 0
    while index < len(lines):
        end = _step_end(lines, index)
        block = "".join(lines[index:end])
        if lines[index].startswith("      - ") and ("uses: " + _ACTION) in block:
            out.append(_for_agent_on_runner(block, route))
            index = end
        else:
            out.append(lines[index])
            index += 1
    return "".join(out)


def _step_end(lines: list[str], start: int) -> int:
    """The line after the step that starts at ``start`` (its lines are indented deeper)."""
    end = start + 1
    while end < len(lines) and lines[end].startswith("        "):
        end += 1
    return end


def _for_agent_on_runner(block: str, route: Route) -> str:
    if route.proxy is not None:
        return _runner_scan(block, route)
    endpoint = urlsplit(endpoint_of(route))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    path = endpoint.path or "/"
    start = _start_step(route, port, path, gateway=True)
    endpoint_flag = "--endpoint ${{ steps.agent.outputs.endpoint }}"
    if _ARGS_LINE in block:  # the step's own args (main's --repeat) follow the endpoint
        return start + block.replace(_ARGS_LINE, f"{_ARGS_LINE}{endpoint_flag} ", 1)
    return start + block.replace(_CONFIG_LINE, f"{_CONFIG_LINE}{_ARGS_LINE}{endpoint_flag}\n", 1)


_START_HEAD_CONTAINER = """\
      # The agent, started on the runner. The probegate step runs in a container of its own,
      # where 127.0.0.1 is that container, not the runner: the agent listens on the runner's
      # address on Docker's bridge network (the container's default gateway), and the scan is
      # pointed there (args: --endpoint). docs/github-action.md, "An agent on the runner itself".
"""
_START_HEAD_RUNNER = """\
      # The agent, started on the runner, its model calls through the model-API proxy the scan
      # below opens on the runner (probegate.yml: model_proxy.listen). It carries the same key
      # the proxy sends upstream, which is what lets its calls through.
"""


def _start_step(route: Route, port: int, path: str, *, gateway: bool) -> str:
    """The step that starts the agent and waits until it answers (any HTTP answer will do)."""
    if gateway:
        host = (
            "          AGENT_HOST=$(docker network inspect bridge --format "
            "'{{(index .IPAM.Config 0).Gateway}}')\n"
        )
        listening = "listening on $AGENT_HOST (not only on 127.0.0.1)"
    else:
        host = "          AGENT_HOST=127.0.0.1\n"
        listening = "listening on $AGENT_HOST"
    env = ""
    if route.proxy is not None:
        proxy = route.proxy
        host += f"          export {proxy.base_url_env}={proxy.base_url}\n"
        env = f"        env:\n          {proxy.key_env}: ${{{{ secrets.{proxy.key_env} }}}}\n"
    if route.start:
        command = f"          {route.start} >agent.log 2>&1 &\n"
    else:
        # ``false`` ends the step (GitHub runs bash -e): a placeholder, said plainly.
        command = (
            f"          # Replace the next two lines with it, e.g. python -m my_agent --host "
            f'"$AGENT_HOST" --port {port} >agent.log 2>&1 &\n'
            '          echo "::error title=probegate::write the command that starts your agent in '
            "the 'Start the agent' step of .github/workflows/probegate.yml\"\n"
            "          false\n"
        )
    return (
        (_START_HEAD_CONTAINER if gateway else _START_HEAD_RUNNER)
        + "      - name: Start the agent\n"
        + "        id: agent\n"
        + env
        + "        run: |\n"
        + host
        + "          export AGENT_HOST\n"
        + f"          # How your agent starts, {listening}, port {port}:\n"
        + command
        + f"          for _ in $(seq {WAIT_SECONDS}); do\n"
        + f'            if curl --silent --output /dev/null "http://$AGENT_HOST:{port}/"; then\n'
        + f'              echo "endpoint=http://$AGENT_HOST:{port}{path}" >>"$GITHUB_OUTPUT"\n'
        + "              exit 0\n"
        + "            fi\n"
        + "            sleep 1\n"
        + "          done\n"
        + '          echo "::error title=probegate::the agent did not answer at '
        + f'http://$AGENT_HOST:{port} within {WAIT_SECONDS} s; its output is in agent.log"\n'
        + "          exit 1\n"
    )


# The Action's inputs a runner scan passes on, as probegate scan's flags.
_FLAGS = {
    "config": "--config",
    "mode": "--mode",
    "fail-under": "--fail-under",
    "fail-on": "--fail-on",
    "budget-usd": "--budget-usd",
    "confirm": "--confirm",
}


def _runner_scan(block: str, route: Route) -> str:
    """The Action's step as steps on the runner: probegate installed at the pinned commit, the
    agent started on the proxy, the scan, and the outputs the Action would publish."""
    step = yaml.safe_load(textwrap.dedent(block))[0]
    with_ = {str(k): str(v) for k, v in (step.get("with") or {}).items()}
    env = dict(step.get("env") or {})
    baseline = with_.pop("baseline", None)
    args = with_.pop("args", None)
    formats = with_.pop("formats", "json,sarif,md")
    unknown = sorted(set(with_) - set(_FLAGS))
    if unknown:
        raise ValueError(f"the example passes inputs a runner scan does not know: {unknown}")
    flags = [f"{_FLAGS[name]}={value}" for name, value in with_.items()]
    shown = formats if "json" in formats.split(",") else f"json,{formats}"
    flags += [f"--output={shown}", "--output-dir=probegate-out"]
    if baseline is not None:
        env["BASELINE"] = baseline
        flags.append('${BASELINE:+"--baseline=$BASELINE"}')
    if args is not None:
        # Flags and numbers only (main's --repeat): split on spaces, as the Action's args input.
        env["ARGS"] = args
        flags.append('"${args[@]}"')
    endpoint = urlsplit(endpoint_of(route))
    start = _start_step(route, endpoint.port or 80, endpoint.path or "/", gateway=False)
    env_lines = "".join(f"          {k}: {v}\n" for k, v in env.items())
    return (
        _INSTALL
        + start
        + f"      - name: {step['name']}\n"
        + f"        id: {step.get('id', 'probegate')}\n"
        + "        env:\n"
        + env_lines
        + "        run: |\n"
        + "          # What the agent says is printed between stop-commands markers: no line\n"
        + "          # of it is read as a workflow command.\n"
        + "          token=$(python -c 'import secrets; print(secrets.token_hex(16))')\n"
        + '          echo "::stop-commands::$token"\n'
        + "          set +e\n"
        + ('          read -ra args <<<"$ARGS"\n' if args is not None else "")
        + f"          probegate scan {' '.join(flags)}\n"
        + "          code=$?\n"
        + "          set -e\n"
        + '          echo "::$token::"\n'
        + "          out=probegate-out\n"
        + "          {\n"
        + '            echo "exit-code=$code"\n'
        + '            if [ -f "$out/scan.json" ]; then echo "json-path=$out/scan.json"; '
        + 'else echo "json-path="; fi\n'
        + '            if [ -f "$out/scan.sarif" ]; then echo "sarif-path=$out/scan.sarif"; '
        + 'else echo "sarif-path="; fi\n'
        + '          } >>"$GITHUB_OUTPUT"\n'
        + '          if [ -f "$out/summary.md" ]; then\n'
        + '            head -c 1000000 "$out/summary.md" >>"$GITHUB_STEP_SUMMARY"\n'
        + "          fi\n"
        + '          exit "$code"\n'
    )


_INSTALL = """\
      - uses: actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97 # v7.0.0
        with:
          python-version: "3.13"
      - name: Install probegate on the runner (the model-API proxy must be where the agent is)
        env:
          # The full commit SHA of the probegate release you reviewed:
          PROBEGATE_COMMIT: "0000000000000000000000000000000000000000"
        run: >-
          python -m pip install
          "probegate @ git+https://github.com/probegate/probegate@${PROBEGATE_COMMIT}"
"""
