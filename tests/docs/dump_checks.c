/* dump_checks.c - prints the checks table (analyzers/a2a_checks.inc, as
 * compiled) one row per line: name, default severity, owners bitmask,
 * summary, separated by tabs; categories first as "category<TAB>name<TAB>
 * title". Read by docs_checks.py, which holds docs/checks.md to the table. */
#include <stdio.h>

#include "a2a_core.h"

int main(void) {
  static const char *const sev[] = {"info", "warning", "error"};
  for (size_t i = 0; i < a2a_check_ncategories; i++)
    printf("category\t%s\t%s\n", a2a_check_categories[i].name, a2a_check_categories[i].title);
  for (int i = 0; i < A2A_CK__COUNT; i++)
    printf("check\t%s\t%s\t%u\t%s\n", a2a_check_table[i].name, sev[a2a_check_table[i].severity],
           a2a_check_table[i].owners, a2a_check_table[i].summary);
  return 0;
}
