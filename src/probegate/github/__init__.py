"""GitHub Action glue: the step outputs, the job summary, annotations, workflow-command escaping.

``entrypoint.sh`` runs the scan; everything that parses JSON or escapes text happens here, typed
and tested, never in bash. Called as ``python -m probegate.github COMMAND`` (:mod:`.cli`):

``token``
    print an unguessable token for ``::stop-commands::TOKEN`` (agent text is printed only
    between that marker and ``::TOKEN::``, so it cannot issue workflow commands).
``split-args``
    split the ``args`` input (``PG_ARGS``) like a POSIX shell splits words, with no expansion
    of any kind, and write the words NUL-separated for ``mapfile -d ''`` (:mod:`.inputs`).
``check-packages``
    after the ``requirements`` input was installed into its own directory, refuse packages the
    image already has at another version (one interpreter loads one version of a package).
``finish``
    read the scan's files and write the step outputs, the job summary and the annotations, make
    the written files readable by the runner user, and exit with the Action's exit code
    (:mod:`.finish`, with :mod:`.summary` and :mod:`.annotations`).

Everything the package prints to stdout or stderr is a workflow command whose data is escaped
(:mod:`.workflow`: ``%``, CR, LF; and ``:``/``,`` in properties), so no line it prints can be
read as another command. Text from the agent or a report file is untrusted: it is cleaned of
control characters first and escaped for wherever it lands (workflow command, Markdown). The
scan's report is read by the one stored-report reader (:mod:`probegate.models.stored`), exit
codes come from the one table (:data:`probegate.errors.EXIT_CODES`); docs/github-action.md
describes the Action.
"""
