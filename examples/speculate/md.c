// The Molecular Dynamics loop of seeds/gpu-tls.txt (Listing 1): each atom
// adds the force of each of its partners to its own Y and to the
// partner's, through the partners array, so iterations that share an atom
// depend on each other only at run time. Partners are neighbour atoms of
// their own (numbered from `atoms` on, one per atom and slot: no
// dependence) except for a share (in 1/1000) that are atoms of the loop
// (a RAW dependence either way: the earlier iteration writes what the
// later one reads). Arguments: atoms, partners per atom, seed, that share.
// Prints a checksum of Y and its first elements.
double X[65536];
double Y[65536];
int partners[524288];

double force(double a, double b) {
  double d = a - b;
  return d / (0.1 + d * d * d * d);
}

int main() {
  int atoms = argi(0, 4096);
  int per = argi(1, 4);
  rand_seed(argi(2, 7));
  int forward = argi(3, 10);
  if (atoms > 32768) atoms = 32768;
  if (atoms * (per + 1) > 65536) per = 65536 / atoms - 1;
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
      double f = force(X[i], X[j]);
      Y[i] += f;
      Y[j] -= f;
    }
  }
  double sum = 0.0;
  for (int a = 0; a < all; a++) sum += Y[a] * (a % 5 + 1);
  printf("md atoms %d partners %d checksum %.9f Y0 %.9f Y1 %.9f\n", atoms, per, sum, Y[0], Y[1]);
  return 0;
}
