# pgpu: the two commands.
#   make run   - set up, build, and compile the example program to PTX for sm_90
#   make test  - set up, build, and run every test (Rust unit tests + lit suite)

CARGO ?= cargo
PROFILE_DIR := target/debug
LIT ?= lit
LIT_FLAGS ?= -sv
EXAMPLE ?= examples/ir/vector_add.mlir
CHIP ?= sm_90

.PHONY: all setup build run test unit lit lint clippy fmt clean

all: build

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --workspace --bins --lib

run: build
	$(PROFILE_DIR)/pgpu-translate --pgpu-to-ptx --chip=$(CHIP) $(EXAMPLE)

unit: setup
	$(CARGO) test --workspace

lit: build
	@PATH="$$PATH:$$HOME/.local/bin" $(LIT) $(LIT_FLAGS) test-suite

test: unit lit

clippy: setup
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
	rm -rf test-suite/Output
