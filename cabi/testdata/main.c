// main for the shared-library build of the reference caller (internal/ctest/abi_prog.c).
int safeput_abi_prog(int argc, char **argv);

int main(int argc, char **argv) { return safeput_abi_prog(argc - 1, argv + 1); }
