// Recursive inline functions cannot be inlined.
// expected-error @+1 {{inline SPMD function 'ping' calls itself: recursion cannot be inlined into SPMD code}}
func.func @ping(%v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %s = func.call @pong(%v) : (i32) -> i32
  pgpu.barrier
  return %s : i32
}
func.func @pong(%v: i32) -> i32 attributes {pgpu.spmd_inline} {
  %s = func.call @ping(%v) : (i32) -> i32
  return %s : i32
}
func.func @user(%n: index, %v: i32) {
  pgpu.spawn %n {
    %x = func.call @ping(%v) : (i32) -> i32
  }
  return
}
