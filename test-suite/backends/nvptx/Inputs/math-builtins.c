// Every math builtin of the C subset (sqrt exp log fabs pow sin cos floor
// and their float forms) inside a speculative loop, whose body becomes a
// GPU kernel on the cuda target; sin and cos also of arguments beyond 2^30
// (x * 1e12). Prints, per iteration, the double and the float sums.
double out[64];
float outf[64];

int main() {
  int n = argi(0, 16);
  if (n > 64) n = 64;
#pragma pgpu speculate
  for (int i = 0; i < n; i++) {
    double x = i * 0.75 - 3.0;
    float xf = i * 0.75f - 3.0f;
    out[i] = sqrt(fabs(x)) + exp(x) + log(i + 1.0) + pow(1.5, x) + sin(x) + cos(x) +
             floor(x) + sin(x * 1e12) + cos(x * 1e12);
    outf[i] = sqrtf(fabsf(xf)) + expf(xf) + logf(i + 1.0f) + powf(1.5f, xf) + sinf(xf) +
              cosf(xf) + floorf(xf) + sinf(xf * 1e12f) + cosf(xf * 1e12f);
  }
  for (int i = 0; i < n; i++) printf("%d %.17g %.9g\n", i, out[i], outf[i]);
  return 0;
}
