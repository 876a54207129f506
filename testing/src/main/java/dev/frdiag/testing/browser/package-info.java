/** A headless browser for page tests: Chromium through ChromeDriver on 127.0.0.1. */
package dev.frdiag.testing.browser;
