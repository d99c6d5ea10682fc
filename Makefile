# Thin wrapper around CMake + CTest.  See README.md.
#   make run                 install deps, build the server + reporter, start it on 127.0.0.1:8080 (data in ./var;
#                            LISTEN=ADDR:PORT and DATA=DIR change them)
#   make test                install deps, build plain + ASan/UBSan, run every test in both
#   make install PREFIX=DIR  install the client library, headers and programs under DIR
#   make bench               run the benchmarks of bench/ and print their tables
#   make fuzz                build the libFuzzer targets with clang and fuzz each for FUZZ_SECONDS

PREFIX       ?= /usr/local
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
BUILD        ?= build
ASAN_BUILD   ?= build-asan
FUZZ_SECONDS ?= 60
LISTEN       ?= 127.0.0.1:8080
DATA         ?= ./var
CMAKE_FLAGS  ?=
# The makes cmake --build runs inherit it: no "Entering directory" lines
# before the server's own (a Ninja build ignores it).
MAKEFLAGS    += --no-print-directory

.PHONY: all deps build build-asan test test-plain test-asan run install bench fuzz lint clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(ASAN_BUILD) -j$(JOBS)

lint:
	@bash scripts/lint-signal-safety.sh

test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 600

test-asan: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900 -LE no-asan

test: lint test-plain test-asan
	@echo "make test: plain and ASan+UBSan suites passed"

# What is installed: the two programs and the client library (shared,
# static and the preload one).  run and install build only these, not the
# tests: faster, and none of the test programs' link warnings.
SHIPPED      := faultline faultline-report faultline_shared faultline_static faultline_preload

run: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target $(SHIPPED)
	@mkdir -p $(DATA)
	@# The server names its own options; under make they are variables.
	@echo "$(BUILD)/src/cli/faultline serve --listen $(LISTEN) --data $(DATA)"
	@$(BUILD)/src/cli/faultline serve --listen $(LISTEN) --data $(DATA) || \
	  { rc=$$?; echo "make run: the server stopped (exit $$rc); make run LISTEN=ADDR:PORT DATA=DIR set its --listen and --data" >&2; exit $$rc; }

# ldconfig (as root): the loader finds the new libfaultline.so in a
# prefix its configuration names (/usr/local/lib) without LD_LIBRARY_PATH.
install: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target $(SHIPPED)
	cmake --install $(BUILD) --prefix $(PREFIX)
	@if [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

bench:
	@bash scripts/deps.sh --bench
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j$(JOBS)
	@bash bench/run.sh $(BUILD)

fuzz: deps
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAULTLINE_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
	cmake --build build-fuzz -j$(JOBS) --target $$(sed -n 's/^ *fl_add_fuzz(\([a-z_]*\).*/\1/p' fuzz/*/CMakeLists.txt | tr '\n' ' ')
	@bash fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) build-fuzz
