package org.mtporacle.api;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Untrusted text stays on one line, bounded, and inert in HTML. */
class UntrustedTextTest {
    @Test
    void everyMessageOfTheContractIsOneLine() {
        String forged = "trace x: bad\n\tat org.mtporacle.Fake.frame(Fake.java:1)\nok   all 3 golden traces passed\r";
        MtpException e = MtpException.malformedFile(forged);
        assertThat(e.getMessage()).doesNotContain("\n").doesNotContain("\r").doesNotContain("\t")
                .contains("bad\\n\\tat org.mtporacle.Fake.frame(Fake.java:1)\\nok   all 3 golden traces passed\\r");
        assertThat(new MtpException(MtpException.Kind.BACKEND_FAILURE, "a\u2028b\u0085c\u202Ed", null).getMessage())
                .isEqualTo("a\\u2028b\\u0085c\\u202ed");
    }

    @Test
    void quoteEscapesQuotesAndClipsLongValues() {
        assertThat(UntrustedText.quote("it's \\ fine")).isEqualTo("'it\\'s \\\\ fine'");
        String q = UntrustedText.quote("x".repeat(5000));
        assertThat(q).hasSizeLessThan(UntrustedText.MAX_CHARS + 40).endsWith("… (5000 chars)");
        assertThat(UntrustedText.clip("y".repeat(300))).startsWith("y".repeat(200) + "…");
        assertThat(UntrustedText.line("plain text, unchanged")).isEqualTo("plain text, unchanged");
    }

    @Test
    void everyMessageIsBoundedAndADigestFromAFileShowsOnlyItsPrefix() {
        MtpException e = MtpException.malformedFile("x: " + "\n".repeat(1_000_000));
        assertThat(e.getMessage()).hasSizeLessThan(UntrustedText.MAX_MESSAGE + 40).doesNotContain("\n")
                .endsWith("… (message cut, 2000003 chars)");
        String d = "3f2a9b0c1d2e" + "a".repeat(52);
        assertThat(UntrustedText.digestPrefix(d)).isEqualTo("'3f2a9b0c1d2e'…");
        assertThat(UntrustedText.digestPrefix("ab\ncd")).isEqualTo("'ab\\ncd'");
        assertThat(UntrustedText.digestPrefix(null)).isEqualTo("absent");
    }

    @Test
    void htmlEscapesMarkupInTextAndAttributes() {
        assertThat(UntrustedText.html("<script>alert('x')</script> & \"q\""))
                .isEqualTo("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
    }
}
