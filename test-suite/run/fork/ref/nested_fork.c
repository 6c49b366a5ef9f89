// Sequential reference of examples/fork/nested_fork.fork: the group ids,
// processor IDs ($), group ranks ($$: the number of members of the group
// before the processor, as every fork renumbers in the parent's order) and
// sizes of the three fork levels computed directly from their definitions;
// the multiprefix and the concurrent write of each level-3 group by
// scanning its members in rank order (processor order); a processor whose
// level-3 id is not 0 or 1 skips that fork's body.
int g1[256];
int r1[256];
int s1[256];
int g2[256];
int r2[256];
int s2[256];
int g3[256];
int r3[256];
int s3[256];
int q1[256];
int q2[256];
int q3[256];
int mp[256];
int leafof[256];
int cnt[12];
int win[12];

int main() {
  int p = argi(0, 24);
  if (p > 256) p = 256;
  if (p < 1) p = 1;
  for (int l = 0; l < 12; l++) win[l] = -1;
  for (int i = 0; i < p; i++) {
    g1[i] = i % 2;
    r1[i] = i / 2;
    g2[i] = r1[i] % 3;
    r2[i] = r1[i] / 3;
    g3[i] = r2[i] / 2;
    r3[i] = 100 - r2[i];
    leafof[i] = (g1[i] * 3 + g2[i]) * 2 + g3[i];
    if (g3[i] > 1) {
      // Outside the level-3 fork's 2 groups: skips its body.
      g3[i] = 0;
      r3[i] = 0;
      leafof[i] = -1;
    }
  }
  for (int i = 0; i < p; i++) {
    for (int j = 0; j < p; j++) {
      if (g1[j] == g1[i]) s1[i]++;
      if (g1[j] == g1[i] && j < i) q1[i]++;
      if (g1[j] == g1[i] && g2[j] == g2[i]) s2[i]++;
      if (g1[j] == g1[i] && g2[j] == g2[i] && j < i) q2[i]++;
      if (leafof[i] >= 0 && leafof[j] == leafof[i]) s3[i]++;
      if (leafof[i] >= 0 && leafof[j] == leafof[i] && j < i) {
        q3[i]++;
        mp[i] = mp[i] + 10 + j;
      }
    }
  }
  for (int l = 0; l < 12; l++) {
    for (int i = 0; i < p; i++) {
      if (leafof[i] == l) {
        cnt[l] = cnt[l] + 10 + i;
        if (win[l] < 0) win[l] = i;
      }
    }
  }
  for (int i = 0; i < p; i++) {
    printf("%d: L1 @%d $%d $$%d size %d | L2 @%d $%d $$%d size %d | L3 @%d $%d $$%d size %d mpadd %d | back %d %d %d\n",
           i, g1[i], r1[i], q1[i], s1[i], g2[i], r2[i], q2[i], s2[i], g3[i], r3[i], q3[i], s3[i],
           mp[i], g2[i] * 1000 + r2[i], g1[i] * 1000 + r1[i], p * 100000 + i);
  }
  for (int l = 0; l < 12; l++) printf("leaf %d: sum %d winner %d\n", l, cnt[l], win[l]);
  return 0;
}
