// Calls of the math builtins with the wrong number of arguments or with
// arguments that do not convert to double (float for the `f` forms): each
// is a diagnostic with a stable code at the call or at the argument; one
// run reports them all and exits with status 1.
// RUN: %expect-exit 1 pgpu emit %s 2>&1 | FileCheck %s
struct point { double x; };
double xs[4];

int main() {
  struct point p;
  double a = sqrt();
  double b = pow(2.0);
  double c = fabs(1.0, 2.0);
  double d = sqrt(xs);
  double e = pow(1.0, p);
  float f = expf(rand_seed(1));
  double g = flor(2.5);
  return 0;
}

// CHECK: csubset::E026
// CHECK: `sqrt` takes 1 argument, but 0 were given
// CHECK: math_errors.c:11:14]
// CHECK: csubset::E026
// CHECK: `pow` takes 2 arguments, but 1 was given
// CHECK: math_errors.c:12:14]
// CHECK: csubset::E026
// CHECK: `fabs` takes 1 argument, but 2 were given
// CHECK: math_errors.c:13:14]
// CHECK: csubset::E023
// CHECK: mismatched types: the argument of `sqrt` has type `double*`, expected
// CHECK: math_errors.c:14:19]
// CHECK: csubset::E023
// CHECK: mismatched types: argument 2 of `pow` has type `struct point`,
// CHECK: math_errors.c:15:23]
// CHECK: csubset::E023
// CHECK: a `void` expression has no value
// CHECK: math_errors.c:16:18]
// CHECK: csubset::E021
// CHECK: unknown function `flor`
// CHECK: math_errors.c:17:14]
// CHECK: help: a function with a similar name exists: `floor`
