// >>print ------------------------------------------------------------------------------------------
/* PLACEHOLDER until printing is written. */
TENSOR_API int tensor_snprint(tensor *t, char *buf, size_t n) { (void)t; if (n) buf[0] = 0; tensor__fail("tensor_snprint", "not implemented yet"); return -1; }
TENSOR_API void tensor_print(tensor *t) { (void)t; tensor__fail("tensor_print", "not implemented yet"); }
