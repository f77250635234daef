// Hostile-input test program: the log density is -inf everywhere (no valid initial point).
parameters {
  real x;
}
model {
  target += negative_infinity();
}
