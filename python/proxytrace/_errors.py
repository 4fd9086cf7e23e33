"""The exceptions of the package, in one place so that callers can catch
ProxytraceError for anything proxytrace itself refuses."""


class ProxytraceError(Exception):
    """Base class of every error proxytrace raises on its own."""


class LibraryNotFoundError(ProxytraceError, OSError):
    """The native part (libproxytrace-loader or the proxytrace command) is
    missing. `tried` lists (where, what happened) for every place looked."""

    def __init__(self, what, tried, hint):
        self.what = what
        self.tried = list(tried)
        lines = ["%s not found; looked in:" % what]
        lines += ["  - %s: %s" % (where, outcome) for where, outcome in self.tried]
        lines.append(hint)
        super().__init__("\n".join(lines))


class EnableError(ProxytraceError):
    """enable() checked with the loader and the host would not load the
    plugin. `result` is the ProbeResult that says why."""

    def __init__(self, message, result=None):
        self.result = result
        super().__init__(message)


class AnalyzeError(ProxytraceError):
    """`proxytrace analyze` refused its input or failed. `exit_code` and
    `stderr` are the command's."""

    def __init__(self, message, exit_code=None, stderr=""):
        self.exit_code = exit_code
        self.stderr = stderr
        super().__init__(message)
