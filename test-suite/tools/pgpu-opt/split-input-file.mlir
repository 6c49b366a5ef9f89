// Each part is parsed and transformed alone; outputs are joined by the
// output split marker; line numbers in diagnostics are those of the file.
// RUN: pgpu-opt %s --split-input-file | FileCheck %s
// RUN: pgpu-opt %s --split-input-file --output-split-marker='// ====' | FileCheck %s --check-prefix=MARKER
// RUN: not pgpu-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// CHECK-LABEL: func.func @first
// CHECK: // -----
// CHECK-LABEL: func.func @first
// MARKER: // ====
// WHOLE: split-input-file.mlir:[[@LINE+6]]:1: error: redefinition of symbol named 'first'
func.func @first() {
  return
}

// -----
func.func @first() {
  return
}
