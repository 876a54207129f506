/**
 * Golden-file checks of reports as users read them, text or JSON, against copies kept in test resources. They
 * compare text and must not depend on the report model or the analysis that produced it.
 */
package dev.frdiag.testing.golden;
