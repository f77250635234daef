// A generated integer with a lower bound that is only assigned far in the tail (mu > 10): at
// almost every draw it stays unassigned and fails its check. Stan writes the parameters and
// NaN for the quantity; stanli (0.24) writes neither, and its param_constrain runs the check
// even for the parameters alone (tests/stan/test_backends.py; corpus iohmm_reg's zstar).
parameters {
  real mu;
}
model {
  mu ~ normal(0, 1);
}
generated quantities {
  int<lower=1> k;
  if (mu > 10) {
    k = 1;
  }
}
