// Apache Avro's own Java compatibility check, timed on the inputs that
// `cargo bench --bench compat` generates, for the ours/Java ratios it prints.
//
// Usage: java -cp <avro jars>:<classes> AvroCompatBench <budget-ms> <case-dir>...
// Each case folder holds v01.avsc .. vNN.avsc (the last one is the candidate).
// It first prints `avro <version>` (the jar's Bundle-Version), then, for each folder, one line:
//   <folder> <BACKWARD x1 ms> <FULL_TRANSITIVE xN ms> <BACKWARD verdict> <FULL_TRANSITIVE verdict>
// where each time is the median of cold runs (every text parsed by a fresh
// Schema.Parser, then checked), taken after a warm-up of the same length so
// the JIT has compiled the hot paths. A verdict is `compatible` or `incompatible`.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.SchemaCompatibility.SchemaCompatibilityType;

public final class AvroCompatBench {
    private AvroCompatBench() {}

    private static Schema parse(String text) {
        return new Schema.Parser().parse(text);
    }

    private static boolean reads(Schema reader, Schema writer) {
        return SchemaCompatibility.checkReaderWriterCompatibility(reader, writer).getType()
                == SchemaCompatibilityType.COMPATIBLE;
    }

    /** BACKWARD: the last text (the candidate) reads the one before it. */
    private static boolean backward(List<String> texts) {
        Schema earlier = parse(texts.get(texts.size() - 2));
        Schema candidate = parse(texts.get(texts.size() - 1));
        return reads(candidate, earlier);
    }

    /** FULL_TRANSITIVE: the last text against every earlier one, both ways. */
    private static boolean fullTransitive(List<String> texts) {
        Schema candidate = parse(texts.get(texts.size() - 1));
        boolean compatible = true;
        for (int index = 0; index < texts.size() - 1; index++) {
            Schema earlier = parse(texts.get(index));
            compatible &= reads(candidate, earlier) && reads(earlier, candidate);
        }
        return compatible;
    }

    private interface Work {
        boolean run();
    }

    /** Runs `work` for `budgetNanos` as warm-up, then again, and returns the median in ms. */
    private static double median(Work work, long budgetNanos) {
        long warmUntil = System.nanoTime() + budgetNanos;
        while (System.nanoTime() < warmUntil) {
            work.run();
        }
        List<Long> samples = new ArrayList<>();
        long until = System.nanoTime() + budgetNanos;
        while (samples.size() < 5 || (System.nanoTime() < until && samples.size() < 1000)) {
            long begin = System.nanoTime();
            work.run();
            samples.add(System.nanoTime() - begin);
        }
        long[] sorted = samples.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2] / 1e6;
    }

    private static String verdict(boolean compatible) {
        return compatible ? "compatible" : "incompatible";
    }

    /** The version in the Avro jar's manifest. */
    private static String avroVersion() throws Exception {
        Path jar = Paths.get(Schema.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (JarFile file = new JarFile(jar.toFile())) {
            String version = file.getManifest().getMainAttributes().getValue("Bundle-Version");
            return version == null ? "unknown" : version;
        }
    }

    public static void main(String[] args) throws Exception {
        long budgetNanos = Long.parseLong(args[0]) * 1_000_000L;
        System.out.println("avro " + avroVersion());
        for (int argument = 1; argument < args.length; argument++) {
            Path folder = Paths.get(args[argument]);
            List<Path> files;
            try (Stream<Path> listing = Files.list(folder)) {
                files = listing.filter(path -> path.toString().endsWith(".avsc")).sorted().collect(Collectors.toList());
            }
            List<String> texts = new ArrayList<>();
            for (Path file : files) {
                texts.add(new String(Files.readAllBytes(file), StandardCharsets.UTF_8));
            }
            double backwardMs = median(() -> backward(texts), budgetNanos);
            double fullMs = median(() -> fullTransitive(texts), budgetNanos);
            System.out.printf(
                    "%s %.4f %.4f %s %s%n",
                    folder.getFileName(),
                    backwardMs,
                    fullMs,
                    verdict(backward(texts)),
                    verdict(fullTransitive(texts)));
            System.out.flush();
        }
    }
}
