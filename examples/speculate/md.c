// The Molecular Dynamics loop of seeds/gpu-tls.txt (Listing 1): each atom
// adds the force of each of its partners to its own Y and to the
// partner's, through the partners array, so iterations that share an atom
// depend on each other only at run time. A partner before the atom makes
// only WAR and WAW dependences (its own iteration ran earlier); one after
// it makes a RAW dependence (its iteration reads what this one wrote).
// Arguments: atoms, partners per atom, seed, and the share (in 1/1000) of
// partners chosen after the atom (the others before it).
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
  if (atoms > 65536) atoms = 65536;
  if (atoms * per > 524288) per = 524288 / atoms;
  for (int a = 0; a < atoms; a++) {
    X[a] = (rand_u32() % 1000) / 100.0;
    Y[a] = 0.0;
  }
  for (int a = 0; a < atoms; a++) {
    for (int k = 0; k < per; k++) {
      int partner = a;
      if (a + 1 < atoms && rand_u32() % 1000 < forward) partner = a + 1 + rand_u32() % (atoms - a - 1);
      else if (a > 0) partner = rand_u32() % a;
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
  for (int a = 0; a < atoms; a++) sum += Y[a] * (a % 5 + 1);
  printf("md atoms %d partners %d checksum %.9f Y0 %.9f Y1 %.9f\n", atoms, per, sum, Y[0], Y[1]);
  return 0;
}
