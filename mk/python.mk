# The Python package `proxytrace` (python/): pure Python over the C code —
# libproxytrace-loader through ctypes, `proxytrace analyze` for dumps. Nothing
# to build; `make install` copies it, `make test` runs its tests
# (tests/python/) against this build folder with Debian's python3.
# (`pip install ./python` is the other way in: it ships the native parts in
# the package, python/_build/proxytrace_build.py.)
#
#   make install [PYTHONDIR=...]
#     PREFIX=/usr        -> /usr/lib/python3/dist-packages        (Debian's own packages' folder)
#     any other PREFIX   -> $(PREFIX)/lib/python3.X/dist-packages (where Debian's python3
#                           looks under /usr/local; X = $(PYTHON)'s minor version)
#   make install PYTHON=/path/to/bin/python
#                        -> that interpreter's own site-packages (a venv, conda,
#                           pyenv or system Python: sysconfig's purelib): an
#                           interpreter named on the command line is the one to
#                           install for (PYTHON_SITE=1, its default then; with
#                           PYTHON_SITE=0 the prefix's folder above, for
#                           that interpreter's minor version)
#   (`make install-python ...` installs the Python part alone.)
#   plus proxytrace/_paths.py: where LIBDIR and BINDIR are, so the installed
#   package finds the loader library and the CLI installed with it.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
PY_SRCS := $(sort $(wildcard python/proxytrace/*.py))
PY_MINOR = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PY_PURELIB = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PYTHON_SITE ?= $(if $(filter command line,$(origin PYTHON)),1,0)
PYTHONDIR ?= $(if $(filter 1,$(PYTHON_SITE)),$(PY_PURELIB),$(if $(filter /usr /usr/,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_MINOR)/dist-packages))
PY_PKG_DIR = $(DESTDIR)$(PYTHONDIR)/proxytrace

.PHONY: install-python
INSTALL_STEPS += install-python

# _paths.py holds LIBDIR and BINDIR both as installed (absolute) and
# relative to the package folder, so a tree installed under DESTDIR and
# moved still finds its library.
install-python: $(PY_SRCS)
	$(INSTALL) -d $(PY_PKG_DIR)
	$(INSTALL) -m 0644 $(PY_SRCS) $(PY_PKG_DIR)/
	$(PYTHON) -c 'import os, sys; pkg, lib, bindir = sys.argv[1:4]; \
	  rel = lambda p: os.path.relpath(p, pkg); \
	  print("# Written by make install: where LIBDIR and BINDIR are."); \
	  print("LIBDIR = %r\nBINDIR = %r\nLIBDIR_REL = %r\nBINDIR_REL = %r" % (lib, bindir, rel(lib), rel(bindir)))' \
	  $(PYTHONDIR)/proxytrace $(LIBDIR) $(BINDIR) > $(PY_PKG_DIR)/_paths.py
	@$(PYTHON) -c 'import os, sys; d = os.path.realpath(sys.argv[1]); \
	  sys.exit(0 if sys.argv[2] or any(os.path.realpath(p) == d for p in sys.path) else \
	  print("note: %s is not on the sys.path of %s: import proxytrace finds it only with PYTHONPATH=%s;" \
	        " into the Python a job uses (venv, conda, pyenv): make install-python PYTHON=/path/to/bin/python" \
	        % (d, sys.executable, d)))' '$(PYTHONDIR)' '$(DESTDIR)'

# ---- tests -----------------------------------------------------------------
# tests/python/run.sh needs the loader's test plugins and test_matrix (the
# shared case list), which mk/loader.mk adds to TEST_TARGETS. Not with ARCH=:
# this machine's python3 cannot load a library built for another
# architecture, and Debian's python3 of that architecture cannot be
# installed beside it; the C code under it is tested by the C tests there.
ifeq ($(ARCH),)
TEST_RUNS += tests/python/run.sh
endif
