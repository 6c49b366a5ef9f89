// Expectations that do not hold, for verify-diagnostics.mlir.

func.func @g(%x: i32) {
  // expected-error @+1 {{this is not the message}}
  return %x : i32
}
// -----
func.func @h() {
  // expected-warning @+1 {{never emitted}}
  return
}
