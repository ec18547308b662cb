# tenzro — the two quick-start commands:
#   make demo   install dependencies, build, run the main job
#   make test   install dependencies, build, run every test
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: setup configure build test demo bench fuzz clean

setup:
	./scripts/setup

configure: setup
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

demo: build
	$(BUILD)/src/cli/tenzro demo

bench: build
	./scripts/bench $(BUILD)

fuzz: setup
	./scripts/fuzz

clean:
	rm -rf $(BUILD) build-fuzz build-asan
