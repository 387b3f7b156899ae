# The demo (router/demo, `kvrouter demo`): kvrouter and a fleet of kvmock
# engines replay a Mooncake trace once per routing policy. `make run` is
# the demo; docs/guides/demo.md explains it.
.PHONY: run demo-test demo-chromium

# kvrouter runs in the demo's process; the engines are kvmock children.
run: $(KVROUTER) $(KVMOCK_BIN)
	@$(KVROUTER) demo

TEST_TARGETS += demo-test

# The replays and the dashboard's browser test, without -race (go-test
# runs the package with it, where they skip: the detector's slowdown
# would be what they measure). Chromium comes from Debian's packages.
demo-test: demo-chromium $(VENV_STAMP)
	KVHASH_REQUIRE_VENV=1 $(GO) test -count=1 -run 'Replay|Dashboard' ./router/demo

# Installs Debian's chromium for the browser test when running as root
# and none is on PATH; otherwise says why the test will skip.
demo-chromium:
	@mkdir -p $(BUILD); if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (Debian) for the dashboard's browser test"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >$(BUILD)/apt-chromium.log 2>&1 || \
	  { apt-get update -q >>$(BUILD)/apt-chromium.log 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >>$(BUILD)/apt-chromium.log 2>&1; } || \
	  echo "chromium could not be installed (see $(BUILD)/apt-chromium.log): the browser test will skip"; \
	else echo "no chromium and not root: the dashboard's browser test will skip"; fi
