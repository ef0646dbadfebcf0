/* The C tests' checks: CHECK counts and reports a failed condition with
 * slm_last_error(); CHECK_ERR expects a call to fail with `status` and a
 * message containing `needle`. Each test's main returns g_fails != 0. */
#ifndef STATICLM_TESTS_C_API_CHECK_H
#define STATICLM_TESTS_C_API_CHECK_H
#include <stdio.h>
#include <string.h>

#include "staticlm/staticlm.h"

static int g_fails = 0, g_checks = 0;
#define CHECK(cond)                                                                         \
    do {                                                                                    \
        ++g_checks;                                                                         \
        if (!(cond)) {                                                                      \
            ++g_fails;                                                                      \
            fprintf(stderr, "FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    slm_last_error());                                                      \
        }                                                                                   \
    } while (0)
#define CHECK_ERR(call, status, needle)                                                \
    do {                                                                               \
        slm_status st_ = (call);                                                       \
        CHECK(st_ == (status) && strstr(slm_last_error(), (needle)) != NULL);          \
        if (st_ != (status) || !strstr(slm_last_error(), (needle)))                    \
            fprintf(stderr, "  got %s: %s\n", slm_status_name(st_), slm_last_error()); \
    } while (0)

#endif
