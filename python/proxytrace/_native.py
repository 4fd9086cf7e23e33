"""Finding and binding the native parts: libproxytrace-loader through ctypes
(the same rules `proxytrace probe` and the emulator use, never a copy of
them in Python) and the `proxytrace` command (for `analyze`).

Where they are looked for, in order (the error names every place):

  1. PROXYTRACE_LOADER_LIBRARY / PROXYTRACE_CLI: an explicit file;
  2. where the install put them, as _paths.py says (written at install
     time): `pip install` ships them in the package's own lib/ and bin/,
     `make install` names its LIBDIR and BINDIR (relative to the package
     and absolute);
  3. PROXYTRACE_HOME: <home>/lib, <home>/lib64, <home> (the library) and
     <home>/bin, <home> (the command), as for the plugin itself;
  4. the build folder of the source checkout, when the package is the
     python/proxytrace of one (python/pyproject.toml beside it) -> build/;
  5. the dynamic linker's own search for the library (LD_LIBRARY_PATH,
     /etc/ld.so.cache, the system folders), PATH for the command.

The library is loaded by its SONAME major; the few structures the binding
fills are checked against the library when it is loaded, so a library with
another layout is refused with a message instead of misread.
"""

import ctypes
import os
import shutil
import threading

from ._errors import LibraryNotFoundError, ProxytraceError

try:  # written by `make install` and `pip install`; absent in the source tree
    from . import _paths
except ImportError:  # pragma: no cover - depends on how it was installed
    _paths = None

VERSION_MAJOR = 1
LOADER_SONAME = "libproxytrace-loader.so.%d" % VERSION_MAJOR
LOADER_DEV_NAME = "libproxytrace-loader.so"
PLUGIN_NAME = "librccl-profiler-proxytrace.so"
COMMAND_NAME = "proxytrace"
COMMAND_WHAT = "the proxytrace command"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Only a package that is the python/proxytrace of a source checkout has a
# build folder to look in: an installed one (site-packages) has none.
_CHECKOUT_BUILD = (os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_DIR)), "build")
                   if os.path.isfile(os.path.join(os.path.dirname(_PACKAGE_DIR), "pyproject.toml"))
                   else None)
_SHIPPED = bool(getattr(_paths, "SHIPPED", False))


# ---- the C structures the binding fills or reads ---------------------------

class Request(ctypes.Structure):
    """pt_request (include/proxytrace/loader.h)."""
    _fields_ = [
        ("plugin", ctypes.c_char_p),
        ("path", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("rccl_enable_proxy_trace", ctypes.c_char_p),
        ("rccl_dir", ctypes.c_char_p),
        ("rccl_anchor", ctypes.c_void_p),
        ("home", ctypes.c_char_p),
        ("net_plugin", ctypes.c_char_p),
        ("ld_library_path", ctypes.c_char_p),
        ("major", ctypes.c_int),
        ("flags", ctypes.c_uint),
    ]


class HostInfo(ctypes.Structure):
    """pt_host_info (include/proxytrace/loader.h)."""
    _fields_ = [
        ("host", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("releases", ctypes.c_char_p),
        ("native_version", ctypes.c_int),
        ("flags", ctypes.c_uint),
        ("max_value", ctypes.c_size_t),
    ]


# pt_request.flags
REQ_ENVIRONMENT = 1 << 0
REQ_CONF_FILES = 1 << 1

# pt_host_info.flags, by the name of PT_HOSTF_<NAME> in lower case.
HOST_RULES = (
    ("none_disables", 1 << 0),
    ("short_names", 1 << 1),
    ("paths", 1 << 2),
    ("static_plugin", 1 << 3),
    ("truncates", 1 << 4),
    ("conf_files", 1 << 5),
    ("net_fallback", 1 << 6),
    ("autoload", 1 << 7),
    ("dump_hook", 1 << 8),
    ("tries_twice", 1 << 9),
    ("rccl_conf", 1 << 10),
    ("conf_home_env", 1 << 11),
    ("conf_strips_cr", 1 << 12),
    ("env_plugin", 1 << 13),
    ("rccl_short", 1 << 14),
)

_c_int_p = ctypes.POINTER(ctypes.c_int)
_void_pp = ctypes.POINTER(ctypes.c_void_p)
_req_p = ctypes.c_void_p  # a pt_request*: byref(Request()) or a buffer
_PROTOTYPES = {
    # name: (restype, argtypes)
    "pt_version": (ctypes.c_char_p, []),
    "pt_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "pt_err_name": (ctypes.c_char_p, [ctypes.c_int]),
    "pt_host_parse": (ctypes.c_int, [ctypes.c_char_p, _c_int_p]),
    "pt_host_info_of": (ctypes.POINTER(HostInfo), [ctypes.c_int]),
    "pt_host_name": (ctypes.c_char_p, [ctypes.c_int]),
    "pt_request_init": (None, [_req_p]),
    "pt_request_from_environment": (None, [_req_p]),
    "pt_request_set_var": (ctypes.c_int, [_req_p, ctypes.c_char_p,
                                          ctypes.c_char_p]),
    "pt_probe": (ctypes.c_int, [_req_p, ctypes.c_int, _void_pp]),
    "pt_probe_env": (ctypes.c_int, [_req_p, ctypes.c_int,
                                    ctypes.POINTER(ctypes.c_char_p), _void_pp]),
    "pt_load": (ctypes.c_int, [_req_p, ctypes.c_int, _void_pp]),
    "pt_result_free": (None, [ctypes.c_void_p]),
    "pt_result_print": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "pt_result_print_json": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
}


class Loader:
    """libproxytrace-loader, bound. `path` is the file it was loaded from."""

    def __init__(self, path, cdll):
        self.path = path
        self.lib = cdll
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(cdll, name)
            except AttributeError:
                raise ProxytraceError(
                    "%s has no %s(): it is an older libproxytrace-loader than this "
                    "package (rebuild or reinstall both from one source tree)" % (path, name))
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)
        self.version = self.pt_version().decode()
        if self.version.split(".")[0] != str(VERSION_MAJOR):
            raise ProxytraceError("%s is libproxytrace-loader %s; this package needs major %d"
                                  % (path, self.version, VERSION_MAJOR))
        self._check_layout()

    def _check_layout(self):
        """The request layout this binding assumes must be the library's:
        pt_request_init/pt_request_set_var write fields at their offsets."""
        size = ctypes.sizeof(Request)
        buf = ctypes.create_string_buffer(b"\xa5" * (size + 256), size + 256)
        req = ctypes.cast(buf, ctypes.POINTER(Request))
        self.pt_request_init(req)
        self.pt_request_from_environment(req)
        values = {}
        for var, field in (("NCCL_PROFILER_PLUGIN", "plugin"),
                           ("RCCL_ENABLE_PROXY_TRACE", "rccl_enable_proxy_trace"),
                           ("PROXYTRACE_HOME", "home"), ("LD_LIBRARY_PATH", "ld_library_path")):
            values[field] = ctypes.c_char_p(var.encode())
            self.pt_request_set_var(buf, var.encode(), values[field])
        r = req.contents
        ok = r.flags == (REQ_ENVIRONMENT | REQ_CONF_FILES) and r.major == 0
        ok = ok and all(getattr(r, f) == v.value for f, v in values.items())
        ok = ok and not (r.path or r.name or r.rccl_dir or r.rccl_anchor or r.net_plugin)
        ok = ok and buf.raw[size:] == b"\xa5" * 256
        if not ok:
            raise ProxytraceError(
                "%s lays out pt_request differently from this package: the library and "
                "the package come from different proxytrace versions" % self.path)

    # -- helpers over the C API ---------------------------------------------

    def err_name(self, code):
        return self.pt_err_name(code).decode()

    def host_count(self):
        n = 0
        while self.pt_host_info_of(n):
            n += 1
        return n

    def host_info(self, host):
        p = self.pt_host_info_of(host)
        return p.contents if p else None


def _libc():
    # The process's own symbols (dlopen(NULL)), not libc.so.6's: free() must
    # be the one that open_memstream's buffer came from, which is another
    # allocator's when one is preloaded (tcmalloc, a sanitizer runtime).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.POINTER(ctypes.c_size_t)]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


_LIBC = None


def capture(print_fn, obj):
    """Text that a C printer (pt_result_print, ..._json) writes to a FILE*."""
    global _LIBC
    if _LIBC is None:
        _LIBC = _libc()
    buf = ctypes.c_void_p()
    size = ctypes.c_size_t()
    f = _LIBC.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not f:
        raise OSError(ctypes.get_errno(), "open_memstream failed")
    try:
        print_fn(obj, f)
    finally:
        _LIBC.fclose(f)
    try:
        return ctypes.string_at(buf, size.value).decode("utf-8", "surrogateescape")
    finally:
        _LIBC.free(buf)


# ---- finding ------------------------------------------------------------------

def _installed_dirs(kind):
    """Folders the install wrote for `kind` ("LIBDIR", "BINDIR"): relative
    to the package first (pip's lib/ and bin/, or a make install tree moved
    after DESTDIR), then absolute."""
    if _paths is None:
        return []
    where = ("shipped in this package by pip install" if _SHIPPED else
             "installed with this package by make install (%s)" % kind)
    out = []
    rel = getattr(_paths, kind + "_REL", None)
    if rel:
        out.append((where, os.path.normpath(os.path.join(_PACKAGE_DIR, rel))))
    absolute = getattr(_paths, kind, None)
    if absolute:
        out.append((where, absolute))
    return out


def _checkout_dirs():
    if _CHECKOUT_BUILD is None:
        return []
    return [("the build folder of this source checkout", _CHECKOUT_BUILD)]


def _hint(what, variable):
    """What to do when `what` is found nowhere, for how this package was
    installed."""
    if _SHIPPED:
        return ("pip install put this package in %s with %s in its lib/ or bin/; reinstall it "
                "(pip install --force-reinstall PATH/python of a proxytrace checkout), or set %s to "
                "the file or PROXYTRACE_HOME to a prefix it was installed in."
                % (_PACKAGE_DIR, what, variable))
    if _paths is not None:
        return ("make install put this package in %s; install the native parts with it again "
                "(make install, same PREFIX), or set %s to the file or PROXYTRACE_HOME to the "
                "prefix they were installed in." % (_PACKAGE_DIR, variable))
    if _CHECKOUT_BUILD is not None:
        return ("Build it (make in %s), or set %s to the file or PROXYTRACE_HOME to the prefix "
                "it was installed in." % (os.path.dirname(_CHECKOUT_BUILD), variable))
    return ("This copy of the package was installed by neither pip nor make install: set %s to "
            "the file or PROXYTRACE_HOME to the prefix the native parts were installed in "
            "(make install), or install the package with pip install PATH/python of a "
            "proxytrace checkout, which ships them." % variable)


def _home_dirs(subdirs):
    home = os.environ.get("PROXYTRACE_HOME")
    if not home:
        return [("PROXYTRACE_HOME", None)]
    return [("PROXYTRACE_HOME", os.path.join(home, s) if s else home) for s in subdirs]


def _loader_places():
    places = _installed_dirs("LIBDIR")
    places += _home_dirs(("lib", "lib64", ""))
    return places + _checkout_dirs()


_lock = threading.Lock()
_loader = None


def _load_file(path, tried, where):
    try:
        cdll = ctypes.CDLL(path)
    except OSError as e:
        tried.append((where, "%s: %s" % (path, e)))
        return None
    return Loader(path, cdll)


def use_loader(path):
    """Bind the library at `path` (and nothing else) from now on."""
    global _loader
    tried = []
    lib = _load_file(path, tried, "given")
    if lib is None:
        raise LibraryNotFoundError(LOADER_SONAME, tried, "Give the path of a built "
                                   "libproxytrace-loader.so.")
    with _lock:
        _loader = lib
    return lib


def loader():
    """The bound libproxytrace-loader, found and loaded on first use."""
    global _loader
    with _lock:
        if _loader is None:
            _loader = _find_loader()
        return _loader


def _find_loader():
    tried = []
    explicit = os.environ.get("PROXYTRACE_LOADER_LIBRARY")
    if explicit:
        lib = _load_file(explicit, tried, "PROXYTRACE_LOADER_LIBRARY")
        if lib is None:
            raise LibraryNotFoundError(LOADER_SONAME, tried,
                                       "PROXYTRACE_LOADER_LIBRARY must name the file itself.")
        return lib
    tried.append(("PROXYTRACE_LOADER_LIBRARY", "not set"))
    for where, folder in _loader_places():
        if folder is None:
            tried.append((where, "not set"))
            continue
        for name in (LOADER_SONAME, LOADER_DEV_NAME):
            path = os.path.join(folder, name)
            if os.path.exists(path):
                lib = _load_file(path, tried, where)
                if lib is not None:
                    return lib
                break
        else:
            tried.append((where, "no %s in %s" % (LOADER_SONAME, folder)))
    where = "the dynamic linker's search (LD_LIBRARY_PATH, /etc/ld.so.cache, system folders)"
    try:
        cdll = ctypes.CDLL(LOADER_SONAME)
    except OSError as e:
        tried.append((where, str(e)))
    else:
        return Loader(LOADER_SONAME, cdll)
    raise LibraryNotFoundError(LOADER_SONAME, tried, _hint(LOADER_SONAME, "PROXYTRACE_LOADER_LIBRARY"))


def loader_dir():
    """The folder the bound library was loaded from (for a library the
    dynamic linker found by name: the file it mapped); None if unknown."""
    path = loader().path
    if os.sep in path:
        return os.path.dirname(os.path.abspath(path))
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                f = line.split(None, 5)[-1].strip()
                if os.path.basename(f).startswith(LOADER_DEV_NAME):
                    return os.path.dirname(f)
    except OSError:
        pass
    return None


def find_command():
    """Path of the `proxytrace` command."""
    tried = []
    explicit = os.environ.get("PROXYTRACE_CLI")
    if explicit:
        if os.access(explicit, os.X_OK) and not os.path.isdir(explicit):
            return explicit
        raise LibraryNotFoundError(COMMAND_WHAT, [("PROXYTRACE_CLI", "%s is not an executable "
                                                   "file" % explicit)],
                                   "PROXYTRACE_CLI must name the proxytrace program itself.")
    tried.append(("PROXYTRACE_CLI", "not set"))
    places = _installed_dirs("BINDIR") + _home_dirs(("bin", "")) + _checkout_dirs()
    for where, folder in places:
        if folder is None:
            tried.append((where, "not set"))
            continue
        path = os.path.join(folder, COMMAND_NAME)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
        tried.append((where, "no %s in %s" % (COMMAND_NAME, folder)))
    found = shutil.which(COMMAND_NAME)
    if found:
        return found
    tried.append(("PATH", "no %s" % COMMAND_NAME))
    raise LibraryNotFoundError(COMMAND_WHAT, tried, _hint(COMMAND_WHAT, "PROXYTRACE_CLI"))
