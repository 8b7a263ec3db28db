package verticalscaler

// AdmissionLag is admissionLag, for the tests of package verticalscaler_test.
const AdmissionLag = admissionLag
