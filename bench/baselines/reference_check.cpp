// CPU reference of the baselines' inputs and checksums (no GPU needed).
//
// What it measures: nothing; it prints the result line a BSGP benchmark
// program prints, computed on the CPU from common.h's generator and
// reference algorithms, so that common.h can be checked against the
// reference interpreter on any machine:
//
//   g++ -O2 -std=c++17 -o /tmp/reference_check bench/baselines/reference_check.cpp
//   /tmp/reference_check find_faces 200 97
//   target/debug/pgpu run --interpret examples/bsgp/listing1_find_faces.bsgp -- 200 97
//   /tmp/reference_check particle_binning 500 8
//   target/debug/pgpu run --interpret examples/bsgp/particle_binning.bsgp -- 500 8
//   /tmp/reference_check sort 1000
//   /tmp/reference_check scan 1000      (and: reduce 1000)
//
// The CUDA baselines print the same lines and, in addition, compare their
// GPU results with these references element by element.
#include "common.h"

#include <string>

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "";
  // argi counts from the argument after the mode.
  int subArgc = argc - 1;
  char** subArgv = argv + 1;
  if (what == "find_faces") {
    int n = bench::argi(subArgc, subArgv, 0, 200);
    int m = bench::argi(subArgc, subArgv, 1, 97);
    bench::FindFacesInput in = bench::find_faces_input(n, m);
    std::vector<int> pf, hd;
    bench::find_faces_cpu(in, pf, hd);
    bench::print_find_faces(n, m, pf, hd);
  } else if (what == "particle_binning") {
    int n = bench::argi(subArgc, subArgv, 0, 500);
    int grid = bench::argi(subArgc, subArgv, 1, 8);
    bench::ParticleInput in = bench::particle_input(n, grid);
    std::vector<float> sx, sy;
    std::vector<int> cs, ce;
    bench::particle_binning_cpu(in, sx, sy, cs, ce);
    bench::print_particles(n, grid, sx, sy, cs, ce);
  } else if (what == "sort") {
    int n = bench::argi(subArgc, subArgv, 0, 1000);
    std::vector<int> keys = bench::sort_keys(n);
    std::vector<int> idx((size_t)n);
    for (int i = 0; i < n; i++) idx[(size_t)i] = i;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int a, int b) { return keys[(size_t)a] < keys[(size_t)b]; });
    std::vector<int> sorted((size_t)n);
    for (int i = 0; i < n; i++) sorted[(size_t)i] = keys[(size_t)idx[(size_t)i]];
    bench::print_sort(n, sorted, idx);
  } else if (what == "scan") {
    int n = bench::argi(subArgc, subArgv, 0, 1000);
    printf("scan n %d total %lld at-half %lld\n", n, bench::prefix_mod5(n),
           bench::prefix_mod5(n / 2));
  } else if (what == "reduce") {
    int n = bench::argi(subArgc, subArgv, 0, 1000);
    printf("reduce n %d total %lld\n", n, bench::prefix_mod5(n));
  } else {
    fprintf(stderr,
            "usage: reference_check find_faces|particle_binning|sort|scan|reduce "
            "[args]\n");
    return 2;
  }
  return 0;
}
