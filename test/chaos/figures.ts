/**
 * The figure sheet of a chaos run: what was tried, what was broken on purpose, and what went wrong.
 * A run passes only when `serverErrors`, `lostWrites` and `violations` stay at zero.
 */
export class FigureSheet {
  requests = 0;
  faults = 0;
  /** 5xx answers other than the 503 the server owes its clients while the database is down. */
  serverErrors = 0;
  /** 503 answers while a fault was active: the honest "retry shortly". */
  unavailableAnswers = 0;
  /** Connections refused or cut (a killed server). */
  networkFailures = 0;
  lostWrites = 0;
  violations = 0;
  readonly notes: string[] = [];
  /** Figures scenarios add to the sheet (`forged documents accepted`, ...), in the order they came. */
  readonly figures = new Map<string, number | string>();
  /** Requests per route of the bad input sweep: the sheet lists them. */
  sweptRoutes = new Map<string, number>();
  private faultActive = 0;

  /** Counts one answer (`status`) or network failure (undefined) of `route` (`METHOD /path/{param}`, named in notes). */
  count(route: string, status: number | undefined): void {
    this.requests++;
    if (status === undefined) this.networkFailures++;
    else if (status === 503 && this.faultActive > 0) this.unavailableAnswers++;
    else if (status >= 500) {
      this.serverErrors++;
      this.note(`${route} answered ${status}`);
    }
  }

  /** Marks a fault injected; answers the function that marks it over. */
  fault(what: string): () => void {
    this.faults++;
    this.faultActive++;
    this.note(`fault: ${what}`);
    let over = false;
    return () => {
      if (!over) this.faultActive--;
      over = true;
    };
  }

  lost(count: number, what: string): void {
    this.lostWrites += count;
    if (count > 0) this.note(`LOST: ${count} ${what}`);
  }

  violated(count: number, what: string): void {
    this.violations += count;
    if (count > 0) this.note(`VIOLATION: ${count} ${what}`);
  }

  note(line: string): void {
    // The first few hundred explain a failing run; more would only bury them.
    if (this.notes.length < 300) this.notes.push(line);
  }

  get passed(): boolean {
    return this.serverErrors === 0 && this.lostWrites === 0 && this.violations === 0;
  }
}
