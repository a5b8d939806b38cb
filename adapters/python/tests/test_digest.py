"""The checkpoint content digest (spec §6, "Content digest") against vectors computed outside the code: the canonical
bytes written out by hand with printf and hashed with sha256sum (the Java and TypeScript tests check the same)."""

import unittest

from mtp_wire import Checkpoint, Tensor, checkpoint_digest

VECTOR_P2 = "c5f4a7d7c91ce0454f4f99bb349e1fb84787fa3b59e3f8fd15f0c15a57fcb220"
VECTOR_P1 = "ca275b0589efc1c0911fb66fe4f5ea3e9c257947d7d4812d2491a9d6fa490269"


def hidden():
    return Tensor("F16", (1, 1, 2), bytes([0x00, 0x3c, 0x00, 0x38]))


class DigestTest(unittest.TestCase):
    def test_the_specified_encoding_byte_for_byte(self):
        keys = Tensor("F32", (1, 1, 1, 2), bytes([0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]))
        values = Tensor("BF16", (1, 1, 1, 2), bytes([0x80, 0x3f, 0x00, 0xc0]))
        self.assertEqual(checkpoint_digest(Checkpoint("qwen-mtp-v1", 2, 1, "abc", keys, values, hidden())), VECTOR_P2)
        self.assertEqual(checkpoint_digest(Checkpoint("qwen-mtp-v1", 1, 0, "abc", None, None, hidden())), VECTOR_P1)

    def test_the_label_is_part_of_it(self):
        self.assertNotEqual(checkpoint_digest(Checkpoint("qwen-mtp-v1", 1, 0, "abd", None, None, hidden())),
                            VECTOR_P1)


if __name__ == "__main__":
    unittest.main()
