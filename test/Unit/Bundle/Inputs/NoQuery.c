/* A shared object that is not a bundle: it exports a function, but not nnsc_bundle_query. */
int nnsc_not_a_bundle(void) { return 0; }
