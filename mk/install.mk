# make install [PREFIX=/usr/local] [DESTDIR=] [LIBDIR=] [INCLUDEDIR=] [BINDIR=]
#
#   $(LIBDIR)/librccl-profiler-proxytrace.so.MAJOR.MINOR.PATCH   the plugin
#            librccl-profiler-proxytrace.so.MAJOR -> the file     (its SONAME)
#            librccl-profiler-proxytrace.so       -> .so.MAJOR    (NCCL_PROFILER_PLUGIN=path,
#                                                                  RCCL auto-load)
#            libnccl-profiler-proxytrace.so       -> .so.MAJOR    (NCCL_PROFILER_PLUGIN=proxytrace)
#            libproxytrace-loader.so.MAJOR.MINOR.PATCH, .so.MAJOR, .so, .a
#            pkgconfig/proxytrace-loader.pc
#   $(INCLUDEDIR)/proxytrace/loader.h, proxytrace/nccl/*.h (the profiler ABI)
#   $(BINDIR)/proxytrace
#
# The links are relative, so a tree installed under DESTDIR can be moved.
INSTALL ?= install
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
LOADER_PC := $(B)/proxytrace-loader.pc
I_LIB = $(DESTDIR)$(LIBDIR)
PLUGIN_STEM := librccl-profiler-proxytrace.so

$(LOADER_PC): src/loader/proxytrace-loader.pc.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

# The pc file depends on PREFIX/LIBDIR, so make it at install time.
.PHONY: $(LOADER_PC)

.PHONY: install-plugin install-loader install-headers install-cli
INSTALL_STEPS += install-plugin install-loader install-headers install-cli

install-plugin: build-all
	@test -f "$(PLUGIN_SO)" || { echo "install: the plugin is not built ($(PLUGIN_SO)); run make" >&2; exit 1; }
	$(INSTALL) -d $(I_LIB)
	$(INSTALL) -m 0755 $(PLUGIN_SO) $(I_LIB)/$(PLUGIN_STEM).$(VERSION)
	ln -sfn $(PLUGIN_STEM).$(VERSION) $(I_LIB)/$(PLUGIN_STEM).$(VERSION_MAJOR)
	ln -sfn $(PLUGIN_STEM).$(VERSION_MAJOR) $(I_LIB)/$(PLUGIN_STEM)
	ln -sfn $(PLUGIN_STEM).$(VERSION_MAJOR) $(I_LIB)/libnccl-profiler-proxytrace.so

install-loader: build-all $(LOADER_PC)
	$(INSTALL) -d $(I_LIB) $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 0755 $(LOADER_SO) $(I_LIB)/libproxytrace-loader.so.$(VERSION)
	ln -sfn libproxytrace-loader.so.$(VERSION) $(I_LIB)/$(LOADER_SONAME)
	ln -sfn $(LOADER_SONAME) $(I_LIB)/libproxytrace-loader.so
	$(INSTALL) -m 0644 $(LOADER_A) $(I_LIB)/libproxytrace-loader.a
	$(INSTALL) -m 0644 $(LOADER_PC) $(DESTDIR)$(PKGCONFIGDIR)/proxytrace-loader.pc

install-headers:
	$(INSTALL) -d $(DESTDIR)$(INCLUDEDIR)/proxytrace/nccl
	$(INSTALL) -m 0644 include/proxytrace/loader.h $(DESTDIR)$(INCLUDEDIR)/proxytrace/
	$(INSTALL) -m 0644 $(wildcard include/nccl/*.h) $(DESTDIR)$(INCLUDEDIR)/proxytrace/nccl/

install-cli: build-all
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/proxytrace
