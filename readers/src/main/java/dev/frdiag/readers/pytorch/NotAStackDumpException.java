package dev.frdiag.readers.pytorch;

import java.io.IOException;

/** Thrown when a text is neither faulthandler's stack dump nor py-spy's: it says what was looked for and found. */
public final class NotAStackDumpException extends IOException {
  private static final long serialVersionUID = 1L;

  NotAStackDumpException(String source, String reason) {
    super(source + ": not a stack dump: " + reason);
  }
}
