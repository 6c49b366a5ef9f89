// `$$` is not C (frontends/fork/ranks.fork).
int main() {
  int x = $$;
  return x;
}
