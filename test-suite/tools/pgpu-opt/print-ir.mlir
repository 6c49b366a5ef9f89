// IR printing around passes goes to standard error.
// RUN: pgpu-opt %s --canonicalize --cse --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-ALL
// RUN: pgpu-opt %s --canonicalize --cse --mlir-print-ir-before-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE-ALL
// RUN: pgpu-opt %s --canonicalize --cse --mlir-print-ir-before=cse -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE-CSE
// RUN: pgpu-opt %s --canonicalize --cse --mlir-print-ir-after=canonicalize -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER-CANON
// RUN: pgpu-opt %s --canonicalize --cse --mlir-print-ir-after-all --mlir-print-ir-module-scope -o /dev/null 2>&1 | FileCheck %s --check-prefix=MODULE

// AFTER-ALL: IR Dump After Canonicalizer (canonicalize)
// AFTER-ALL: IR Dump After CSE (cse)
// BEFORE-ALL: IR Dump Before Canonicalizer (canonicalize)
// BEFORE-ALL: IR Dump Before CSE (cse)
// BEFORE-CSE-NOT: IR Dump Before Canonicalizer
// BEFORE-CSE: IR Dump Before CSE (cse)
// BEFORE-CSE-NOT: IR Dump
// AFTER-CANON: IR Dump After Canonicalizer (canonicalize)
// AFTER-CANON-NOT: IR Dump After CSE
// MODULE: IR Dump After Canonicalizer (canonicalize)
// MODULE-NEXT: module {
func.func @f(%a: i32) -> i32 {
  %c = arith.constant 0 : i32
  %s = arith.addi %a, %c : i32
  return %s : i32
}
