/* A test shared library that is not a plugin: it exports a function, but
 * not EPPROF_PLUGIN_ENTRY_SYMBOL. Loading it must fail with NOT_FOUND. */

#define TEST_EXPORT __attribute__((visibility("default")))

TEST_EXPORT int epprof_test_not_an_entry(void);

TEST_EXPORT int epprof_test_not_an_entry(void) { return 42; }
