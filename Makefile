# tenzro — the two quick-start commands:
#   make demo   install dependencies, build, run the main job
#   make test   install dependencies, build, run every test
# (make test-arm64: the lower modules cross-built for aarch64, their tests
# under qemu on three CPU models; scripts/test-arm64.)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: setup configure build test test-arm64 demo bench fuzz soak clean

setup:
	./scripts/setup

# ccache whenever it is installed (scripts/setup installs it; checked when the
# recipe runs, i.e. after setup): see cmake/ccache-launch for the shared cache
# directory (/var/cache/tenzro/ccache) and its settings.
CCACHE_FLAGS = $$(command -v ccache >/dev/null 2>&1 && echo -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

configure: setup
	cmake -S . -B $(BUILD) -G Ninja $(CCACHE_FLAGS) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# Cross build for aarch64 (build-arm64) and its tests under qemu.
test-arm64:
	JOBS=$(JOBS) ./scripts/test-arm64

demo: build
	$(BUILD)/src/cli/tenzro demo

# Builds the Google Benchmark programs (bench/) in $(BUILD) and runs each one
# briefly; JSON results in $(BUILD)/bench/ (scripts/bench).
bench: setup
	CMAKE_FLAGS="$(CMAKE_FLAGS)" ./scripts/bench $(BUILD)

fuzz: setup
	./scripts/fuzz

# The soak test (tests/node/soak_process_test.cc) for SOAK_SECONDS (default
# 300): honest distributed forwards while a hostile client floods every public
# route of three real nodes. `make test` runs it for 10 s; not part of .ci/run.
SOAK_SECONDS ?= 300
soak: build
	cd $(BUILD) && TENZRO_SOAK_SECONDS=$(SOAK_SECONDS) ./tests/node/tenzro_node_tests --gtest_filter='SoakProcessTest.*'

clean:
	rm -rf $(BUILD) build-fuzz build-asan build-arm64
