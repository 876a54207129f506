package dev.frdiag;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layout docs/ARCHITECTURE.md describes, checked over the main classes of every module on this
 * classpath (this module's is the one that holds them all). Maven already refuses a module that imports one it
 * does not depend on; what it cannot see are cycles between packages and what a pure module reaches through its
 * own dependencies.
 */
class ArchitectureTest {
  private static JavaClasses main;

  @BeforeAll
  static void importClasses() {
    main = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("dev.frdiag");
  }

  @Test
  void noPackageDependsOnItselfThroughAnother() {
    slices().matching("dev.frdiag.(**)").should().beFreeOfCycles().check(main);
  }

  @Test
  void theAnalysisAndItsReportsDoNoIoAndReadNoClock() {
    noClasses().that().resideInAnyPackage("dev.frdiag.analysis..", "dev.frdiag.report..")
        .should().dependOnClassesThat().resideInAnyPackage("io.grpc..", "java.nio.file..", "java.net..")
        .orShould().callMethod(System.class, "currentTimeMillis")
        .orShould().callMethod(System.class, "nanoTime")
        .because("the analysis is one pure function, live and offline, and a report is what it returns")
        .check(main);
  }
}
