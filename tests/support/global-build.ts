import { buildServer } from './server-process';

/** The server bundle that the tests' server processes run, built once for the whole run, as `npm start` builds it. */
export default function setup() {
  buildServer();
}
