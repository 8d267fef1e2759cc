// Whether an ARIA option is selected (aria-selected="true"); null once it is gone from the page.
function(){ return this.isConnected ? this.getAttribute('aria-selected') === 'true' : null; }
