# The C ABI: libkvhash.so (cgo, -buildmode=c-shared), its hand-written
# header, its pkg-config file, and the C test program of bindings/c.
CAPI_LIB    := $(BUILD)/libkvhash.so
CAPI_HEADER := $(BUILD)/include/kvhash.h
CAPI_PC     := $(BUILD)/kvhash.pc
# go build also writes cgo's own header next to the library; it is kept
# here, out of the way, and only used to check the hand-written one.
CAPI_GENDIR := $(BUILD)/capi
CTEST_DIR   := $(BUILD)/c-test
CTEST_CC    ?= cc
CTEST_CFLAGS := -std=c11 -O1 -g -Wall -Wextra -Werror -pthread
CTEST_LINK  := -L$(BUILD) -lkvhash -Wl,-rpath,$(abspath $(BUILD))
CTEST_VECTORS := $(wildcard conformance/vectors/v1/*.json)

BUILD_TARGETS += $(CAPI_LIB) $(CAPI_HEADER) $(CAPI_PC)
TEST_TARGETS  += c-test

# Built aside and moved into place, so that a reader polling build/ never
# sees half a library.
$(CAPI_LIB): $(GO_SOURCES)
	@mkdir -p $(CAPI_GENDIR)
	$(GO) build -buildmode=c-shared -o $(CAPI_GENDIR)/libkvhash.so ./capi
	cp $(CAPI_GENDIR)/libkvhash.so $@.tmp
	mv -f $@.tmp $@

$(CAPI_HEADER): capi/include/kvhash.h
	install -D -m 644 $< $@

# The version and spec version come from core/spec.go, the one place they
# are written.
$(CAPI_PC): capi/kvhash.pc.in core/spec.go
	@version=$$(sed -n 's/^const Version = "\(.*\)"$$/\1/p' core/spec.go); \
	  spec=$$(sed -n 's/^const SpecVersion = "\(.*\)"$$/\1/p' core/spec.go); \
	  test -n "$$version" && test -n "$$spec"; \
	  sed -e 's|@PREFIX@|$(abspath $(BUILD))|' -e "s|@VERSION@|$$version|" -e "s|@SPEC@|$$spec|" $< > $@.tmp
	mv -f $@.tmp $@

# The JSON vectors flattened to one line a case, so that the C test needs
# no JSON parser. The converter only reformats; it computes no hash.
$(CTEST_DIR)/vectors.txt: bindings/c/flatten_vectors.py $(CTEST_VECTORS) $(VENV_STAMP)
	@mkdir -p $(CTEST_DIR)
	$(PY) $< $(CTEST_VECTORS) > $@.tmp
	mv -f $@.tmp $@

$(CTEST_DIR)/kvhash_test: bindings/c/kvhash_test.c $(CAPI_HEADER) $(CAPI_LIB)
	@mkdir -p $(CTEST_DIR)
	$(CTEST_CC) $(CTEST_CFLAGS) -I$(BUILD)/include -o $@ $< $(CTEST_LINK)

# The C tests need pkg-config (the example builds through it) and nm from
# binutils (the header check). Missing ones are installed with apt-get
# when running as root on Debian/Ubuntu; otherwise the check names the
# packages to install.
C_TOOLS := pkg-config nm
.PHONY: c-tools
c-tools:
	@missing=""; for tool in $(C_TOOLS); do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	  [ -z "$$missing" ] && exit 0; \
	  pkgs=$$(for tool in $$missing; do case $$tool in nm) echo binutils;; *) echo $$tool;; esac; done | tr '\n' ' ' | sed 's/ $$//'); \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "c-tools: installing $$pkgs (for$$missing) with apt-get"; \
	    { apt-get install -y -qq $$pkgs >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq $$pkgs >/dev/null 2>&1; }; } \
	      && exit 0; \
	  fi; \
	  echo "c-tools: the C tests need$$missing: install the Debian/Ubuntu packages: sudo apt-get install $$pkgs" >&2; exit 1

# The example builds through pkg-config, which checks kvhash.pc too.
$(CTEST_DIR)/example: bindings/c/example.c $(CAPI_HEADER) $(CAPI_LIB) $(CAPI_PC) | c-tools
	@mkdir -p $(CTEST_DIR)
	$(CTEST_CC) $(CTEST_CFLAGS) -o $@ $< \
	  $$(PKG_CONFIG_PATH=$(abspath $(BUILD)) pkg-config --cflags --libs kvhash) \
	  -Wl,-rpath,$(abspath $(BUILD))

# The same test against a library built with Go's -asan, the C side with
# -fsanitize=address: ASan then checks every access to C memory, Go's
# writes into the caller's buffers included.
$(CTEST_DIR)/asan/libkvhash.so: $(GO_SOURCES)
	@mkdir -p $(@D)
	$(GO) build -asan -buildmode=c-shared -o $@ ./capi

$(CTEST_DIR)/kvhash_test_asan: bindings/c/kvhash_test.c $(CAPI_HEADER) $(CTEST_DIR)/asan/libkvhash.so
	$(CTEST_CC) $(CTEST_CFLAGS) -fsanitize=address -fno-omit-frame-pointer -I$(BUILD)/include -o $@ $< \
	  -L$(CTEST_DIR)/asan -lkvhash -Wl,-rpath,$(abspath $(CTEST_DIR)/asan)

.PHONY: c-test c-header-check c-valgrind
# The hand-written header must declare exactly what the library exports,
# with the same C types as cgo's generated header (const aside: Go cannot
# say const, so it is compiled away for this check only).
c-header-check: $(CAPI_HEADER) $(CAPI_LIB) | c-tools
	$(CTEST_CC) -std=c11 -Wall -Werror -fsyntax-only -Dconst= \
	  -include $(CAPI_GENDIR)/libkvhash.h -I$(BUILD)/include bindings/c/header_check.c
	@want=$$(sed -n 's/^[a-z_0-9 ]*[ *]\(kvhash_[a-z_0-9]*\)(.*/\1/p' $(CAPI_HEADER) | sort); \
	  have=$$(nm -D --defined-only $(CAPI_LIB) | awk '$$3 ~ /^kvhash_/ {print $$3}' | sort); \
	  if [ "$$want" != "$$have" ]; then \
	    echo "kvhash.h and libkvhash.so disagree:"; diff <(echo "$$want") <(echo "$$have"); exit 1; fi

c-test: c-header-check $(CTEST_DIR)/kvhash_test $(CTEST_DIR)/kvhash_test_asan $(CTEST_DIR)/example $(CTEST_DIR)/vectors.txt
	$(CTEST_DIR)/example
	$(CTEST_DIR)/kvhash_test_asan $(CTEST_DIR)/vectors.txt > $(CTEST_DIR)/asan.out 2>&1 \
	  || { cat $(CTEST_DIR)/asan.out; echo "c-test: the ASan run failed"; exit 1; }
	@echo "ASan run: $$(tail -n 1 $(CTEST_DIR)/asan.out)"
	$(CTEST_DIR)/kvhash_test $(CTEST_DIR)/vectors.txt

# Not part of `make test`: memcheck over the test program. The Go runtime
# needs the suppressions file and no asynchronous preemption (its signal
# handler writes below the stack pointer, which memcheck reports).
c-valgrind: $(CTEST_DIR)/kvhash_test $(CTEST_DIR)/vectors.txt
	GODEBUG=asyncpreemptoff=1 valgrind -q --error-exitcode=99 --leak-check=full \
	  --errors-for-leak-kinds=definite --suppressions=bindings/c/valgrind.supp \
	  --log-file=$(CTEST_DIR)/valgrind.log $(CTEST_DIR)/kvhash_test $(CTEST_DIR)/vectors.txt \
	  || { grep -v 'debug info\|DW_FORM' $(CTEST_DIR)/valgrind.log; exit 1; }
