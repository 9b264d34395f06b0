import unittest


class Sizes(unittest.TestCase):
    # pytest 8 fails the test; pytest 9 reports the subtest (SUBFAILED) and
    # passes the test's own line.
    def test_each(self):
        for n in range(3):
            with self.subTest(n=n):
                self.assertLess(n, 2)

    def test_all_fine(self):
        for n in range(2):
            with self.subTest(n=n):
                self.assertLess(n, 2)
