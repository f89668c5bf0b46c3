"""The binding's declarations against the C header, so that they cannot drift."""
import unittest

import ccsandbox
from ccsandbox import _lib, constants

from helpers import header_constants, header_functions


class TestAbi(unittest.TestCase):
    def test_every_header_constant_is_mirrored_with_its_value(self):
        hc = header_constants()
        self.assertGreater(len(hc), 40)
        skip = {"CCSB_VERSION_MAJOR", "CCSB_VERSION_MINOR", "CCSB_VERSION_PATCH"}
        for name, value in hc.items():
            if name in skip:
                continue
            short = name[len("CCSB_"):]
            self.assertTrue(hasattr(constants, short), "constants lacks %s" % name)
            self.assertEqual(getattr(constants, short), value, name)

    def test_every_header_function_is_declared(self):
        declared = set(_lib.PROTOTYPES) | _lib.UNWRAPPED
        self.assertEqual(header_functions(), declared)

    def test_loaded_library_matches_header_version(self):
        hc = header_constants()
        want = "%d.%d.%d" % (hc["CCSB_VERSION_MAJOR"], hc["CCSB_VERSION_MINOR"],
                             hc["CCSB_VERSION_PATCH"])
        self.assertEqual(ccsandbox.version(), want)
        self.assertEqual(ccsandbox.version_number(),
                         (hc["CCSB_VERSION_MAJOR"] << 16) | (hc["CCSB_VERSION_MINOR"] << 8)
                         | hc["CCSB_VERSION_PATCH"])

    def test_names(self):
        self.assertEqual(ccsandbox.strerror(constants.E_SPEC), "invalid spec")
        self.assertEqual(ccsandbox.backend_from_name(None), "none")
        self.assertEqual(ccsandbox.backend_from_name("docker"), "native")
        self.assertEqual(ccsandbox.backend_from_name("nonsense"), "none")
        self.assertEqual(ccsandbox.backend_from_name("microvm"), "microvm")

    def test_explicit_missing_library_is_an_error(self):
        with self.assertRaises(OSError) as cm:
            _lib.load("/nonexistent/libccsandbox.so.1")
        self.assertIn("/nonexistent/libccsandbox.so.1", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
