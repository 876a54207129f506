package dev.frdiag.readers.nccl;

import java.util.Objects;

/**
 * The NCCL version a log was written by, either printed ({@code NCCL version 2.19.4+cuda12.2}) or inferred from
 * how its lines are spelled.
 *
 * @param version {@code 2.19.4+cuda12.2} when printed; a range such as {@code 2.26 or later}, {@code 2.20 or earlier}
 *     or {@code 2.21 to 2.23} when inferred
 * @param inferred true when no banner was found and {@code version} is a range read from the line formats
 * @param basis where the version comes from: the banner's line, or each format clue with its line
 */
public record NcclVersion(String version, boolean inferred, String basis) {
  public NcclVersion {
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(basis, "basis");
    if (version.isBlank()) {
      throw new IllegalArgumentException("version must not be blank");
    }
  }

  @Override
  public String toString() {
    return inferred ? version + " (inferred: " + basis + ")" : version;
  }
}
