package dev.frdiag.readers.nccl;

import java.io.IOException;

/** Thrown when a file is not an NCCL log: binary data, or no NCCL line where NCCL lines must be. */
public final class NotAnNcclLogException extends IOException {
  private static final long serialVersionUID = 1L;

  NotAnNcclLogException(String source, String reason) {
    super(source + ": not an NCCL log: " + reason);
  }
}
