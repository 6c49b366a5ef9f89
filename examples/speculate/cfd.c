// The Computational Fluid Dynamics loop of seeds/gpu-tls.txt (Listing 2):
// each edge updates the values of its two nodes, whose numbers come from
// the edge list, so which iterations touch the same node is known only at
// run time. Edges take distinct nodes while there are (node 2e and 2e + 1
// of a permutation), except for a share (in 1/1000) that repeat an earlier
// edge's nodes (dependences between iterations). The paper does not say
// what f and g compute; here each averages its formula over `weight`
// sample differences (the weight of an iteration, as M is the synthetic
// loop's; 1: one evaluation). Arguments: nodes, edges, seed, that share,
// weight. Prints a checksum of Y and its first elements.
double X[65536];
double Y[65536];
int left_node[65536];
int right_node[65536];

double flux(double a, double b, int weight) {
  double total = 0.0;
  for (int s = 0; s < weight; s++) {
    double d = (a - b) * (1.0 + s * 0.001);
    total += 0.5 * d / (1.0 + d * d);
  }
  return total / weight;
}

double relax(double a, double b, int weight) {
  double total = 0.0;
  for (int s = 0; s < weight; s++) {
    double c = b * (1.0 + s * 0.001);
    total += 0.25 * (a + c) / (1.0 + a * a + c * c);
  }
  return total / weight;
}

int main() {
  int nodes = argi(0, 4096);
  int edges = argi(1, 4096);
  rand_seed(argi(2, 7));
  int repeat = argi(3, 10);
  int weight = argi(4, 1);
  if (weight < 1) weight = 1;
  if (nodes > 65536) nodes = 65536;
  if (edges > 65536) edges = 65536;
  for (int n = 0; n < nodes; n++) {
    X[n] = (rand_u32() % 1000) / 100.0;
    Y[n] = 0.0;
  }
  for (int e = 0; e < edges; e++) {
    if (e > 0 && rand_u32() % 1000 < repeat) {
      int earlier = rand_u32() % e;
      left_node[e] = left_node[earlier];
      right_node[e] = right_node[earlier];
    } else {
      left_node[e] = (2 * e % nodes) * 7919 % nodes;
      right_node[e] = ((2 * e + 1) % nodes) * 7919 % nodes;
    }
  }
#pragma pgpu speculate
  for (int i = 0; i < edges; i++) {
    int n1 = left_node[i];
    int n2 = right_node[i];
    Y[n1] += flux(X[n1], X[n2], weight);
    Y[n2] += relax(X[n1], X[n2], weight);
  }
  double sum = 0.0;
  for (int n = 0; n < nodes; n++) sum += Y[n] * (n % 7 + 1);
  printf("cfd nodes %d edges %d weight %d checksum %.9f Y0 %.9f Y1 %.9f\n", nodes, edges, weight, sum, Y[0], Y[1]);
  return 0;
}
