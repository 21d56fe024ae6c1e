// Shard 1 of 2 of the lab matrix (tests/support/labs-matrix.ts): which labs it grades, and why the matrix is cut.
import { labMatrix } from './support/labs-matrix.ts';

await labMatrix(1, 2);
