package org.mtporacle.conformance.report;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A report's failures grouped by signature: the entry, the category, what differed (the tensor or field) and the
 * action it differed at, without seeds and counts ({@code CHECKPOINT keys at "commit full"}). Seventy-five chains that
 * fail the same way are one group of 75 with one example in full, its shortest shrunk chain, and the places in the
 * tensor where the group's failures differed most, most frequent first.
 */
public final class FailureGroups {
    private FailureGroups() {
    }

    /**
     * One signature's failures, in report order; {@code example} is the one with the shortest shrunk chain (the
     * first such), {@code places} each recorded largest-difference place with how often it occurred.
     */
    public record Group(String entryKey, String signature, List<TextReport.Failure> failures,
                        TextReport.Failure example, Map<String, Integer> places) {
        public int size() {
            return failures.size();
        }
    }

    /** The groups, in the order their first failure appears in the report. */
    public static List<Group> of(ConformReport r) {
        Map<String, List<TextReport.Failure>> by = new LinkedHashMap<>();
        for (TextReport.Failure f : TextReport.failures(r)) {
            by.computeIfAbsent(f.entry().key() + "\u0000" + signature(f.record()), k -> new ArrayList<>()).add(f);
        }
        List<Group> out = new ArrayList<>();
        by.forEach((k, fs) -> {
            TextReport.Failure example = fs.stream().min(Comparator.comparingInt(f -> f.record().shrunkActions()
                    .size())).orElseThrow();
            Map<String, Integer> counts = new LinkedHashMap<>();
            for (TextReport.Failure f : fs) {
                Object where = f.record().details().get("largestDifference");
                if (where != null) {
                    counts.merge(place(String.valueOf(where)), 1, Integer::sum);
                }
            }
            Map<String, Integer> places = new LinkedHashMap<>();
            counts.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
                    .forEach(e -> places.put(e.getKey(), e.getValue()));
            out.add(new Group(fs.getFirst().entry().key(), signature(fs.getFirst().record()), List.copyOf(fs),
                    example, places));
        });
        return out;
    }

    /** {@code CATEGORY what at "action"}: the category, the tensor or field judged, and the action's verb. */
    static String signature(ConformReport.FailureRecord f) {
        Object what = f.details().get("tensor");
        if (what == null) {
            what = f.details().get("field");
        }
        if (what == null) {
            what = f.details().get("kind");
        }
        String action = f.actionIndex() >= 0 && f.actionIndex() < f.shrunkActions().size()
                ? verb(f.shrunkActions().get(f.actionIndex())) : "";
        return f.category() + (what == null ? "" : " " + what) + (action.isEmpty() ? "" : " at \"" + action + "\"");
    }

    /** An action's words up to its first parameter: {@code "commit full seed=5"} → {@code "commit full"}. */
    static String verb(String action) {
        List<String> words = new ArrayList<>();
        for (String w : action.trim().split("\\s+")) {
            if (w.isEmpty() || w.contains("=") || w.startsWith("[") || Character.isDigit(w.charAt(0))
                    || w.startsWith("(")) {
                break;
            }
            words.add(w);
        }
        return String.join(" ", words);
    }

    /** The place of a largest difference without its values: {@code "kv head 1, position 3, dim 12"}. */
    static String place(String largestDifference) {
        int colon = largestDifference.indexOf(':');
        return colon < 0 ? largestDifference : largestDifference.substring(0, colon);
    }

    /** "75 failures, 1 distinct" */
    public static String headline(int failures, int groups) {
        return failures + (failures == 1 ? " failure" : " failures") + ", " + groups + " distinct";
    }
}
