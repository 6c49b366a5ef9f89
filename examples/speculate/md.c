// The Molecular Dynamics loop of seeds/gpu-tls.txt (Listing 1): each atom
// adds the force of each of its partners to its own Y and to the
// partner's, through the partners array, so iterations that share an atom
// depend on each other only at run time. Partners are neighbour atoms of
// their own (numbered from `atoms` on, one per atom and slot: no
// dependence) except for a share (in 1/1000) that are atoms of the loop
// (a RAW dependence either way: the earlier iteration writes what the
// later one reads). The paper does not say what force() computes; here it
// averages a short-range pair force over `weight` sample distances (the
// weight of an iteration, as M is the synthetic loop's; 1: one
// evaluation). Arguments: atoms, partners per atom, seed, that share,
// weight. Prints a checksum of Y and its first elements.
double X[1048576];
double Y[1048576];
int partners[1048576];

double force(double a, double b, int weight) {
  double total = 0.0;
  for (int s = 0; s < weight; s++) {
    double d = (a - b) * (1.0 + s * 0.001);
    total += d / (0.1 + d * d * d * d);
  }
  return total / weight;
}

int main() {
  int atoms = argi(0, 4096);
  int per = argi(1, 4);
  rand_seed(argi(2, 7));
  int forward = argi(3, 10);
  int weight = argi(4, 1);
  if (atoms > 32768) atoms = 32768;
  if (atoms < 1) atoms = 1;
  if (weight < 1) weight = 1;
  if (atoms * (per + 1) > 1048576) per = 1048576 / atoms - 1;
  int all = atoms * (per + 1);
  for (int a = 0; a < all; a++) {
    X[a] = (rand_u32() % 1000) / 100.0;
    Y[a] = 0.0;
  }
  for (int a = 0; a < atoms; a++) {
    for (int k = 0; k < per; k++) {
      int partner = atoms + a * per + k;
      if (atoms > 1 && rand_u32() % 1000 < forward) {
        partner = rand_u32() % (atoms - 1);
        if (partner >= a) partner = partner + 1;
      }
      partners[a * per + k] = partner;
    }
  }
#pragma pgpu speculate
  for (int i = 0; i < atoms; i++) {
    for (int k = 0; k < per; k++) {
      int j = partners[i * per + k];
      double f = force(X[i], X[j], weight);
      Y[i] += f;
      Y[j] -= f;
    }
  }
  double sum = 0.0;
  for (int a = 0; a < all; a++) sum += Y[a] * (a % 5 + 1);
  printf("md atoms %d partners %d weight %d checksum %.9f Y0 %.9f Y1 %.9f\n", atoms, per, weight, sum, Y[0], Y[1]);
  return 0;
}
