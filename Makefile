# pgpu: the two commands.
#   make run   - set up, build, compile a BSGP example program (the paper's
#                Listing 1) to a native executable and run it (on the GPU
#                when a CUDA device is usable, else on the CPU)
#   make test  - set up, build, and run every test (Rust unit tests + lit
#                suite) and build the API docs with warnings as errors

CARGO ?= cargo
PROFILE_DIR := target/debug
LIT ?= lit
LIT_FLAGS ?= -sv
EXAMPLE ?= examples/bsgp/listing1_find_faces.bsgp
ARGS ?=
PTX_EXAMPLE ?= examples/ir/vector_add.mlir
CHIP ?= sm_90

.PHONY: all setup build run ptx test unit lit rustdoc lint clippy fmt clean docs

all: build

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --workspace --bins --lib

run: build
	$(PROFILE_DIR)/pgpu compile --target cuda --chip $(CHIP) $(EXAMPLE) -o $(PROFILE_DIR)/example
	$(PROFILE_DIR)/example $(ARGS)

ptx: build
	$(PROFILE_DIR)/pgpu-translate --pgpu-to-ptx --chip=$(CHIP) $(PTX_EXAMPLE)

unit: build
	$(CARGO) test --workspace

lit: build
	@PATH="$$PATH:$$HOME/.local/bin" $(LIT) $(LIT_FLAGS) test-suite

# The Rust API documentation; a broken or private intra-doc link fails it.
rustdoc: setup
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

test: unit lit rustdoc

clippy: setup
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

# The dialect reference from the ODS descriptions (checked by
# test-suite/lint/dialect-doc.test).
docs: setup
	./scripts/dialect-doc.sh > docs/dialect.md.tmp && mv docs/dialect.md.tmp docs/dialect.md

clean:
	$(CARGO) clean
	rm -rf test-suite/Output
