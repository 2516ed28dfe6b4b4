# GPUnex: the two commands are `make run` and `make test`.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all deps configure build run cluster cluster-down test test-asan fuzz bench format clean

all: build

deps:
	@scripts/deps.sh

configure:
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS) >/dev/null

build: deps configure
	@ninja -C $(BUILD_DIR)

# Builds, then serves on SQLite at http://127.0.0.1:8080 with a local agent.
run: build
	@scripts/run.sh

# Builds, then starts PostgreSQL, N replicas (default 2) and nginx on loopback (scripts/cluster.sh).
N ?= 2
cluster: build
	@scripts/cluster.sh up $(N)

cluster-down:
	@scripts/cluster.sh down

# Builds and runs every test: unit, store (SQLite and PostgreSQL), API, browser, fuzz, sanitizers.
test: deps
	@scripts/test.sh

# The C++ suites under AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	@scripts/asan.sh

fuzz: deps
	@scripts/fuzz.sh 60

bench: build
	@bench/http.sh

format:
	@find src tests bench -name '*.cpp' -o -name '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) build-asan build-fuzz
