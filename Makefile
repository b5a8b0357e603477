# SPDX-License-Identifier: Apache-2.0
# procctl: a thin wrapper over CMake.
#   make demo    install what is missing, build, run the demo (core, then procctl-node)
#   make test    install what is missing, build, run every test three ways:
#                gcc -O2; clang with ASan+UBSan (and libFuzzer); clang TSan;
#                then every build type (Release, Debug, MinSizeRel) with gcc
#                and clang, the unit tests in gcc's Release and Debug; each
#                runs whatever the others did, with a summary at the end;
#                tests side by side, TEST_JOBS (cores + 1) at once
#   make bench   build and write build/bench.json (with the test peers: the
#                churn of the Kubernetes API beside a client, bench/kube_churn.js)
#   make fuzz    the open-ended fuzzing (FUZZ_SECONDS, 60, a target) that
#                make test's fixed, seeded runs are not; finds kept in
#                build-asan/fuzz
#   make soak    build, then every attack of issue 17 at once on one daemon
#                for SOAK_SECONDS (600) beside a healthy client; figures
#                in build/soak.json (not part of make test)
#   make install build, then install under $(PREFIX) (/usr/local), staged
#                in $(DESTDIR) when given: procctl, procctl-node, procctl.h,
#                libprocctl-agent and its headers, pkg-config files, a CMake
#                package (find_package(procctl)), the manual pages,
#                procctl-node.service and its config (kept when present)
#   make image   the procctl-node image (deploy/Dockerfile) with podman, on
#                a Debian base made here, no registry needed; its size
#   make clean
JOBS ?= $(shell nproc)
# Tests side by side: most wait on processes, sockets and the kernel more
# than they compute (each in namespaces of its own, see test/isolate.sh).
TEST_JOBS ?= $(shell expr $$(nproc) + 1)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

PREFIX ?= /usr/local

.PHONY: all deps build demo test test-gcc test-asan test-tsan build-types test-builds bench fuzz soak install image clean

all: build

deps:
	@scripts/install-deps.sh

# One build of this tree at a time (flock): two demos started together
# would configure build/ at once, and CMake's configure does not survive it.
build: deps
	mkdir -p build
	flock build/.make.lock sh -c 'cmake -S . -B build $(CMAKE_FLAGS) && cmake --build build -j$(JOBS)'

install: build
	DESTDIR=$(DESTDIR) cmake --install build --prefix $(PREFIX)

image:
	scripts/image.sh

# In pid and mount namespaces of its own (as root), as the tests are: two
# demos, or a demo beside make test, never see each other's processes.
demo: build
	sh test/isolate.sh scripts/demo.sh

test: deps
	scripts/install-peers.sh
	scripts/test-all.sh "$(MAKE)"

test-gcc:
	CC=gcc CXX=g++ cmake -S . -B build $(CMAKE_FLAGS)
	cmake --build build -j$(JOBS)
	ctest --test-dir build --output-on-failure -j$(TEST_JOBS)

# The header matrix, the SPIN model and the proto lint are compiler-independent:
# they run in test-gcc only. The demo runs in the gcc and ASan builds (under
# TSan its uninstrumented gRPC would need test/node's suppressions too).
test-asan:
	CC=clang CXX=clang++ cmake -S . -B build-asan $(CMAKE_FLAGS) -DPROCCTL_SANITIZE=address
	cmake --build build-asan -j$(JOBS)
	ctest --test-dir build-asan --output-on-failure -j$(TEST_JOBS) -E 'header_matrix|model_|proto_|readme|chart|image|install|spdx|seed|^debs$$'

test-tsan:
	CC=clang CXX=clang++ cmake -S . -B build-tsan $(CMAKE_FLAGS) -DPROCCTL_SANITIZE=thread
	cmake --build build-tsan -j$(JOBS)
	ctest --test-dir build-tsan --output-on-failure -j$(TEST_JOBS) -E 'header_matrix|model_|proto_|fuzz_|demo|readme|chart|image|install|spdx|seed|^debs$$'

# Every build type a packager or user may pick stays -Werror clean with
# both compilers (gcc 12 warns at -O2 -O3 -Os in places -O2 -g does not),
# and the unit tests pass optimized and not (test_hello, kernel-bound, runs
# in the builds above).
BUILD_TYPES = Release Debug MinSizeRel
build-types:
	@for cc in gcc:g++ clang:clang++; do for t in $(BUILD_TYPES); do \
	  d=build-types/$${cc%%:*}-$$t; echo "== $$d"; \
	  CC=$${cc%%:*} CXX=$${cc##*:} cmake -S . -B $$d -DCMAKE_BUILD_TYPE=$$t >/dev/null && \
	  cmake --build $$d -j$(JOBS) >$$d.log 2>&1 || { cat $$d.log; exit 1; }; done; done

test-builds: build-types
	for t in Release Debug; do \
	  ctest --test-dir build-types/gcc-$$t --output-on-failure -j$(TEST_JOBS) -R '^test_' -E '^test_hello$$' || exit 1; done

bench: build
	scripts/install-peers.sh
	{ build/bench/bench_process && build/bench/bench_agent && build/bench/bench_arbiter && build/bench/bench_node && build/bench/bench_hello && build/bench/bench_forks && build/bench/bench_stop && build/bench/bench_bells && build/bench/bench_scale && build/bench/bench_many && \
	  { PROCCTL_NODE=$(CURDIR)/build/procctl-node ECHO_CLIENT=$(CURDIR)/build/examples/echo-client \
	    TOKEN_CLIENT=$(CURDIR)/build/examples/token-client PROTO_DIR=$(CURDIR)/proto \
	    BUF=$(CURDIR)/test/peers/node_modules/.bin/buf NODE_PATH=$(CURDIR)/test/peers/node_modules \
	    node bench/kube_churn.js | grep '^{'; }; } | paste -sd, | sed 's/^/[/; s/$$/]/' > build/bench.json
	@cat build/bench.json

fuzz: deps
	scripts/fuzz.sh

SOAK_SECONDS ?= 600
soak: build
	scripts/install-peers.sh
	PROCCTL_NODE=$(CURDIR)/build/procctl-node PROCCTL_CLI=$(CURDIR)/build/clients/procctl \
	ECHO_CLIENT=$(CURDIR)/build/examples/echo-client \
	TOKEN_CLIENT=$(CURDIR)/build/examples/token-client PROCSIM=$(CURDIR)/build/test/procsim SOAK_SECONDS=$(SOAK_SECONDS) \
	SOAK_OUT=$(CURDIR)/build/soak.json PROCCTL_TEST_TIMEOUT_MS=$$(( ($(SOAK_SECONDS) + 900) * 1000 )) \
	sh test/node/run.sh $(CURDIR) $(CURDIR)/test/node/soak.js

clean:
	rm -rf build build-asan build-tsan build-types
