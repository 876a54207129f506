package dev.frdiag.evidence;

/**
 * A path given to {@link EvidenceReader} that cannot be used at all (it does not exist, or is a folder that cannot be
 * listed, holds nothing the reader knows, or holds dumps it cannot tell apart); the message says which and why.
 * Reading stops: the caller asked for something else.
 */
public final class UnusableInputException extends Exception {
  private static final long serialVersionUID = 1L;

  UnusableInputException(String message) {
    super(message);
  }

  UnusableInputException(String message, Throwable cause) {
    super(message, cause);
  }
}
