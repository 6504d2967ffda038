/* placeholder, replaced by the host binary */
int main(void) { return 0; }
