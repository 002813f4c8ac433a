// Live pages poll the API about once a second. One poller per page: the router stops it when
// the page is left, and a poll never overlaps the previous one.

const INTERVAL_MS = 1000;

export class Poller {
  constructor() {
    this.stopped = false;
    this.timer = null;
    this.controller = new AbortController();
  }

  /** Call `tick(signal)` now and then again 1 s after each call ends, until stopped or until
   * it returns false. */
  start(tick) {
    const run = async () => {
      if (this.stopped) return;
      let again = true;
      try {
        again = (await tick(this.controller.signal)) !== false;
      } catch (error) {
        if (error.name === "AbortError") return;
        console.error(error);
      }
      if (again && !this.stopped) this.timer = setTimeout(run, INTERVAL_MS);
    };
    run();
    return this;
  }

  /** Stop polling and abort the request in flight. */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller.abort();
  }
}
