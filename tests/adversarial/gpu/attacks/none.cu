// Control, no attack: the plain kernel alone. It must pass parity everywhere (and, being
// slow, read as a regression), so that every verdict of the attacks below is the attack's.
