/* The C entry of the runtime smoke test: records the arguments for argi
   and runs the program's entry function. */
#include <stdint.h>

void pgpu_rt_init(int32_t argc, char **argv);
int32_t pgpu_main(void);

int main(int argc, char **argv) {
  pgpu_rt_init(argc, argv);
  return pgpu_main();
}
